/**
 * `post_tasks` of `market mcp`: the CLI's own posting engine and journal rules, run on a task file the call's rows
 * are written to. Each idempotencyKey (per wallet) has a directory under the state directory holding `tasks.jsonl`
 * (the call's rows), its results file and its journal (journal.ts), so repeating the call with the same key is
 * rerunning the same `post-tasks` command: rows already posted are reported, rows paid but not listed are listed
 * without paying again, and only the rest are paid for. Once anything was journaled, the key's rows are fixed: a
 * different payload is `IDEMPOTENCY_KEY_REUSED`.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { clientError } from "../../sdk/src/errors";
import { erc20Interface } from "../../sdk/src/chain";
import type { CheckedRow, WrapTo } from "../../sdk/src/posting";
import { canonicalJson } from "../../sdk/src/mcp/quotes";
import { BULK_AUTO_CRITERIA, type VerificationCriteria } from "../../core/verification";
import { factsOf, type McpRowStatus, type Poster, type PostRunResult } from "../../sdk/src/mcp/post-tasks";
import type { CliConfig } from "./config";
import { journalPathFor, readJournal } from "./journal";
import { postFresh, type PostTasksHooks } from "./post-tasks";
import { RowStatus } from "./results";
import { finishRows, openRun, resultsPathFor, sortRows, type Sorted } from "./run";
import type { Terminal } from "./terminal";

/** Default state directory of `market mcp` (MARKET_MCP_STATE_DIR overrides it). */
export const defaultStateDir = () => path.join(homedir(), ".market", "mcp");

const STATUS: Record<RowStatus, McpRowStatus> = {
  [RowStatus.posted]: "posted",
  [RowStatus.unlisted]: "unlisted",
  [RowStatus.failed]: "failed",
  [RowStatus.notStarted]: "not_started",
};

const quietProgress = { update() {}, end() {} };

/**
 * The task file line of a row (JSON Lines: the column names of core/bulk). A rental adds its agent (`target`), its
 * service and its criteria; rows with the bulk default criteria write none, so their lines stay as they were.
 */
function fileLine({ row, verificationCriteria }: CheckedRow): string {
  const criteria =
    verificationCriteria && canonicalJson(verificationCriteria) !== canonicalJson(BULK_AUTO_CRITERIA) ? verificationCriteria : undefined;
  return JSON.stringify({
    instructions: row.instructions,
    amount: row.amount.toString(),
    duration: row.durationSeconds,
    privacy: row.privacy,
    capabilities: row.capabilities,
    ...(row.routingSummary !== undefined ? { routing_summary: row.routingSummary } : {}),
    ...(row.target !== undefined ? { target: row.target } : {}),
    ...(row.serviceId !== undefined ? { service_id: row.serviceId } : {}),
    ...(criteria ? criteriaColumns(criteria) : {}),
  });
}

/** Criteria as the verification columns of core/bulk (the rules a file row can carry). */
function criteriaColumns(criteria: VerificationCriteria): Record<string, unknown> {
  const known = ["min_length", "contains_keywords", "regex_pattern", "pass_threshold"];
  const unknown = Object.keys(criteria).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw clientError("VALIDATION_FAILED", `criteria ${unknown.join(", ")} cannot be journaled as task file columns`);
  return {
    ...(criteria.min_length !== undefined ? { verification_min_length: criteria.min_length } : {}),
    ...(criteria.contains_keywords !== undefined ? { verification_keywords: criteria.contains_keywords } : {}),
    ...(criteria.regex_pattern !== undefined ? { verification_regex: criteria.regex_pattern } : {}),
    ...(criteria.pass_threshold !== undefined ? { pass_threshold: criteria.pass_threshold } : {}),
  };
}

/** The directory of one idempotencyKey's call of one wallet, under the state directory. */
export function runDirectory(stateDir: string, wallet: string, idempotencyKey: string): string {
  return path.join(stateDir, createHash("sha256").update(`${wallet.toLowerCase()}\n${idempotencyKey}`).digest("hex").slice(0, 32));
}

/** The call's task file in its run directory (its results file and journal sit beside it). */
export const TASK_FILE = "tasks.jsonl";

export function journaledPoster(config: CliConfig, options: { stateDir: string; terminal: Terminal; hooks?: PostTasksHooks }): Poster {
  const wallet = new Wallet(config.privateKey!).address;
  return {
    async open(rows, idempotencyKey, openOptions = {}) {
      const dir = runDirectory(options.stateDir, wallet, idempotencyKey);
      const file = path.join(dir, TASK_FILE);
      const text = `${rows.map(fileLine).join("\n")}\n`;
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      if (existsSync(file) && readFileSync(file, "utf8") !== text) {
        const journal = journalPathFor(resultsPathFor(file));
        if (existsSync(journal) && statSync(journal).size > 0) {
          // Rows of that call that may be paid and are not listed (a rental's price changed since, say): named, to cancel.
          const unfinished = [...readJournal(journal).values()]
            .filter((j) => !j.posted && j.attempts.length > 0)
            .map((j) => j.attempts.at(-1)!.taskHash);
          throw clientError(
            "IDEMPOTENCY_KEY_REUSED",
            "This idempotencyKey was used for other tasks (or a rental at another price); repeat that call exactly to finish it, or use a new key for these. Nothing was spent." +
              (unfinished.length > 0
                ? ` That call left ${unfinished.length} task(s) possibly paid and not listed: cancel_task each for a full refund.`
                : ""),
            unfinished.length > 0
              ? { details: unfinished.map((taskHash) => ({ taskHash, message: "possibly paid by the earlier call and not listed" })) }
              : {},
          );
        }
      }
      writeFileSync(file, text);

      const run = await openRun(file, undefined, config, options.terminal);
      try {
        const sorted = await sortRows(run, { waitMs: 0 });
        // A funding of an earlier call still pending: nothing new is paid until it is mined (its nonce comes first).
        const fresh = sorted.pending.length > 0 ? [] : sorted.fresh;
        const { chain } = run;
        const settlement = await run.client.settlement(chain.chain);
        const read = (data: string) => chain.provider.call({ to: chain.token, data }).then(BigInt);
        const [balance, allowance] = await Promise.all([
          read(erc20Interface.encodeFunctionData("balanceOf", [chain.wallet.address])),
          read(erc20Interface.encodeFunctionData("allowance", [chain.wallet.address, chain.escrow])),
        ]);
        const facts = factsOf({
          tasks: run.rows.length,
          alreadyPosted: sorted.posted.length,
          toFinish: sorted.toFinish.length,
          fresh: fresh.map((r) => ({ amount: r.row.amount, privacy: r.row.privacy })),
          settlement,
          payFrom: chain.wallet.address,
          balance,
          allowance,
        });
        return {
          facts,
          execute: () => execute(run, sorted, fresh, openOptions.wrapTo ?? "any-chain", options.hooks),
          close: () => run.close(),
        };
      } catch (error) {
        run.close();
        throw error;
      }
    },
  };
}

async function execute(
  run: Awaited<ReturnType<typeof openRun>>,
  sorted: Sorted,
  fresh: Sorted["fresh"],
  wrapTo: WrapTo,
  hooks: PostTasksHooks | undefined,
): Promise<PostRunResult> {
  run.results.write();
  const finished = await finishRows(run, sorted.toFinish, quietProgress);
  // A listing failure stops the run: nothing new is paid while the service refuses listings.
  if (finished && fresh.length > 0) {
    await postFresh(run, fresh, { file: run.file, yes: true, wrapTo }, quietProgress, { count: 0 }, hooks ?? {});
  }
  run.results.write();

  const already = new Set(sorted.posted.map((r) => r.key));
  const freshKeys = new Set(fresh.map((r) => r.key));
  let escrowPaid = 0n;
  const results = run.rows.map((row) => {
    const outcome = run.results.get(row);
    const status: McpRowStatus = already.has(row.key) ? "already_posted" : STATUS[outcome.status];
    if (freshKeys.has(row.key) && (status === "posted" || status === "unlisted")) escrowPaid += row.row.amount;
    return {
      index: row.line - 1,
      status,
      amount: row.row.amount.toString(),
      ...(outcome.taskHash ? { taskHash: outcome.taskHash } : {}),
      ...(outcome.txHash ? { txHash: outcome.txHash } : {}),
      ...(outcome.error ? { error: outcome.error } : {}),
    };
  });
  const count = (status: McpRowStatus) => results.filter((r) => r.status === status).length;
  return {
    tasks: results.length,
    alreadyPosted: count("already_posted"),
    posted: count("posted"),
    unlisted: count("unlisted"),
    failed: count("failed"),
    notStarted: count("not_started"),
    escrowPaid: escrowPaid.toString(),
    results,
  };
}

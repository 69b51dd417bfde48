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
import type { CheckedRow } from "../../sdk/src/posting";
import { factsOf, type McpRowStatus, type Poster, type PostRunResult } from "../../sdk/src/mcp/post-tasks";
import type { CliConfig } from "./config";
import { journalPathFor } from "./journal";
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

/** The task file line of a row (JSON Lines: the column names of core/bulk). */
function fileLine({ row }: CheckedRow): string {
  return JSON.stringify({
    instructions: row.instructions,
    amount: row.amount.toString(),
    duration: row.durationSeconds,
    privacy: row.privacy,
    capabilities: row.capabilities,
    ...(row.routingSummary !== undefined ? { routing_summary: row.routingSummary } : {}),
  });
}

export function journaledPoster(config: CliConfig, options: { stateDir: string; terminal: Terminal; hooks?: PostTasksHooks }): Poster {
  const wallet = new Wallet(config.privateKey!).address;
  return {
    async open(rows, idempotencyKey) {
      const dir = path.join(options.stateDir, createHash("sha256").update(`${wallet.toLowerCase()}\n${idempotencyKey}`).digest("hex").slice(0, 32));
      const file = path.join(dir, "tasks.jsonl");
      const text = `${rows.map(fileLine).join("\n")}\n`;
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      if (existsSync(file) && readFileSync(file, "utf8") !== text) {
        const journal = journalPathFor(resultsPathFor(file));
        if (existsSync(journal) && statSync(journal).size > 0) {
          throw clientError(
            "IDEMPOTENCY_KEY_REUSED",
            "This idempotencyKey was used for other tasks; repeat that call exactly to finish it, or use a new key for these. Nothing was spent.",
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
          execute: () => execute(run, sorted, fresh, options.hooks),
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
  hooks: PostTasksHooks | undefined,
): Promise<PostRunResult> {
  run.results.write();
  const finished = await finishRows(run, sorted.toFinish, quietProgress);
  // A listing failure stops the run: nothing new is paid while the service refuses listings.
  if (finished && fresh.length > 0) {
    await postFresh(run, fresh, { file: run.file, yes: true, wrapTo: "any-chain" }, quietProgress, { count: 0 }, hooks ?? {});
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

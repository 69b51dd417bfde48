/**
 * `post_tasks` on the journaled engine, for a wallet that signs where the call runs (`market mcp`, and the API's
 * remote `/mcp` for a hosted agent's custodied wallet). Each idempotencyKey (per wallet) has a call store: its
 * journal and the fingerprint of its rows. Repeating the call with the same key is rerunning the same run: rows
 * already posted are reported, rows paid but not listed are listed without paying again, and only the rest are paid
 * for. Once anything was journaled, the key's rows are fixed: a different payload is `IDEMPOTENCY_KEY_REUSED`.
 */
import { sha256, toUtf8Bytes, Wallet } from "ethers";
import { clientError } from "../../errors";
import { erc20Interface } from "../../chain";
import type { MarketClient } from "../../client";
import type { CheckedRow } from "../check";
import type { WrapTo } from "../types";
import { BULK_AUTO_CRITERIA, type VerificationCriteria } from "@market/core/verification/criteria";
import { canonicalJson } from "../../mcp/quotes";
import { factsOf, type McpRowStatus, type Poster, type PostRunResult } from "../../mcp/post-tasks";
import { foldEntries } from "./entries";
import { RowStatus } from "./outcomes";
import { postFresh, type PostTasksHooks } from "./post";
import { quietReporter, type FundedIndex, type JournalPort, type Reporter } from "./ports";
import { callRows } from "./rows";
import { finishRows, openRun, sortRows, type Sorted } from "./run";
import { preflight, refuseListed } from "./preflight";
import type { Run } from "./types";

/** The name of one idempotencyKey's call of one wallet (32 hex characters): where hosts file its store. */
export function callId(wallet: string, idempotencyKey: string): string {
  return sha256(toUtf8Bytes(`${wallet.toLowerCase()}\n${idempotencyKey}`)).slice(2, 34);
}

/** One idempotencyKey's call of one wallet: where its journal and its rows' fingerprint are kept. */
export interface CallStore {
  /** Names the call in messages. */
  readonly name: string;
  journal: JournalPort;
  /** The fingerprint of the rows of the call last opened under this key, if it is kept. */
  rows(): Promise<string | undefined>;
  /** Keeps the fingerprint of this call's rows (at the latest with the call's first journal entry). */
  setRows(fingerprint: string): Promise<void>;
}

export interface CallPosterOptions {
  /** A client acting as the signing wallet, made afresh for each call (its wallet connection ends with the call). */
  client: () => MarketClient;
  /** The wallet's private key (the call stores are per wallet). */
  privateKey: string;
  /** The API base URL the rows are listed through, as the journal binds it. */
  api: string;
  /** The store of one idempotencyKey's call of `wallet`. */
  store: (wallet: string, idempotencyKey: string) => CallStore;
  funded?: (scope: { chainId: number; escrow: string; wallet: string }) => FundedIndex;
  reporter?: Reporter;
  hooks?: PostTasksHooks;
}

const STATUS: Record<RowStatus, McpRowStatus> = {
  [RowStatus.posted]: "posted",
  [RowStatus.unlisted]: "unlisted",
  [RowStatus.failed]: "failed",
  [RowStatus.notStarted]: "not_started",
};

/**
 * The fingerprint of a call's rows: one JSON line per row with the column names of core/bulk (what `market mcp` has
 * kept as `tasks.jsonl` since its first version, so a call an earlier version left unfinished is still recognized).
 * Rows with the bulk default criteria write none.
 */
export function callFingerprint(rows: readonly CheckedRow[]): string {
  return `${rows.map(fingerprintLine).join("\n")}\n`;
}

function fingerprintLine({ row, verificationCriteria }: CheckedRow): string {
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

/** Criteria as the verification columns of core/bulk; a rule no column carries is kept whole beside them. */
function criteriaColumns(criteria: VerificationCriteria): Record<string, unknown> {
  const known = ["min_length", "contains_keywords", "regex_pattern", "pass_threshold"];
  const unknown = Object.keys(criteria).filter((key) => !known.includes(key));
  return {
    ...(criteria.min_length !== undefined ? { verification_min_length: criteria.min_length } : {}),
    ...(criteria.contains_keywords !== undefined ? { verification_keywords: criteria.contains_keywords } : {}),
    ...(criteria.regex_pattern !== undefined ? { verification_regex: criteria.regex_pattern } : {}),
    ...(criteria.pass_threshold !== undefined ? { pass_threshold: criteria.pass_threshold } : {}),
    ...(unknown.length > 0 ? { verification_criteria: JSON.parse(canonicalJson(criteria)) as unknown } : {}),
  };
}

export function callPoster(options: CallPosterOptions): Poster {
  const wallet = new Wallet(options.privateKey).address;
  const reporter = options.reporter ?? quietReporter;
  return {
    async open(rows, idempotencyKey, openOptions = {}) {
      const store = options.store(wallet, idempotencyKey);
      const fingerprint = callFingerprint(rows);
      const recorded = await store.rows();
      if (recorded !== undefined && recorded !== fingerprint) {
        const entries = await store.journal.read();
        if (entries.length > 0) {
          // Rows of that call that may be paid and are not listed (a rental's price changed since, say): named, to cancel.
          const unfinished = [...foldEntries(entries).rows.values()]
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
      await store.setRows(fingerprint);

      const run = await openRun({
        file: store.name,
        rows: callRows(rows),
        client: options.client(),
        api: options.api,
        journal: store.journal,
        ...(options.funded ? { funded: options.funded } : {}),
        reporter,
      });
      try {
        const sorted = await sortRows(run, { waitMs: 0 });
        // What the real run checks before sending (preflight.ts), so the quote counts only what can be posted.
        await preflight(run, sorted, { wrapTo: openOptions.wrapTo ?? "any-chain" });
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
        await run.close();
        throw error;
      }
    },
  };
}

async function execute(run: Run, sorted: Sorted, fresh: Sorted["fresh"], wrapTo: WrapTo, hooks: PostTasksHooks | undefined): Promise<PostRunResult> {
  await refuseListed(run, sorted.listed ?? []);
  run.results.write();
  const quiet = quietReporter.progress(0, "");
  const finished = await finishRows(run, sorted.toFinish, quiet);
  // A listing failure stops the run: nothing new is paid while the service refuses listings.
  if (finished && fresh.length > 0) {
    await postFresh(run, fresh, { wrapTo }, quiet, { count: 0 }, hooks ?? {});
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

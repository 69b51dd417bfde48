import { ZeroAddress } from "ethers";
import type { Http } from "./http";
import { ApiError, clientError, type RowError } from "./errors";
import { erc20Interface, escrowInterface, type ChainWallet, type Settlement } from "./chain";
import { checkBulkRows, type BulkColumn, type BulkRow, type RowValues } from "../../core/bulk";
import { encryptBrief, privateTaskHash, publicTaskHash, wrapBriefKey } from "../../core/crypto";
import { BULK_AUTO_CRITERIA, validateCriteria, type VerificationCriteria } from "../../core/verification";
import { parseAgentAddress } from "../../core/task-fields";
import { BATCH_CHUNK_SIZE, MAX_BULK_ROWS } from "../../core/limits";
import type { AgentAnswer, AgentProfile, BuiltBatch, BuiltTask, ExecutorsAnswer, IndexAnswer, ListingOutcome, Uploaded } from "../../core/api";

/** One task to post (a row of `postTasks`, or `postTask`'s argument). */
export interface PostTaskInput {
  /** The brief. */
  instructions: string;
  /** Reward in raw units (USDC has 6 decimals): give this or `reward`. */
  amountRaw?: bigint | string;
  /** Reward as USDC decimal text, e.g. "2.5": give this or `amountRaw`. */
  reward?: string;
  /** Default `private`. */
  privacy?: "public" | "private";
  /** Default 86,400 (one day); 3,600 to 7,776,000. */
  durationSeconds?: number;
  /** Default `auto`. `agent` (with `verifierAddress`) only through `postTask`. */
  verificationMode?: "auto" | "manual" | "agent";
  /** Default for `auto`: `{ min_length: 10, pass_threshold: 60 }` (plus the real-content rules). */
  verificationCriteria?: VerificationCriteria;
  verifierAddress?: string;
  capabilities?: string[];
  routingSummary?: string;
  zone?: string;
  /** The only agent that may take the task. */
  targetExecutor?: string;
}

/** Everything `indexTask` needs to list a funded task: keep it for a task left unlisted. */
export interface IndexParams {
  txHash: string;
  taskHash: string;
  privacy: "public" | "private";
  publicBrief?: string;
  rootHash?: string;
  wrappedKeys?: Record<string, string>;
  verificationMode: "auto" | "manual" | "agent";
  verificationCriteria?: VerificationCriteria;
  verifierAddress?: string;
  requiredCapabilities: string[];
  routingSummary?: string;
  locationZone: string;
  targetExecutor?: string;
}

export type PostStatus = "posted" | "unlisted" | "failed" | "skipped";

export interface PostResult {
  /** The row's index in the call. */
  index: number;
  status: PostStatus;
  taskHash?: string;
  txHash?: string;
  amountRaw: string;
  privacy: "public" | "private";
  /** Set on `unlisted` rows: pass to `indexTask` to finish them; never post the row again. */
  indexParams?: IndexParams;
  error?: { code: string; message: string };
}

export interface PostTasksResult {
  posted: number;
  unlisted: number;
  failed: number;
  skipped: number;
  /** True when a funding or listing failure ended the run early. */
  stopped: boolean;
  totalRaw: string;
  results: PostResult[];
  /**
   * Milliseconds spent per phase: checking rows (and finding the agents briefs are wrapped to), preparing briefs
   * (encrypting, uploading, wrapping keys), funding (building, approving, sending, mining) and listing. Preparing the
   * next chunk overlaps funding and listing the current one, so the phases may add up to more than the run.
   */
  timings: { checkMs: number; prepareMs: number; fundMs: number; listMs: number };
}

/** A chunk about to be funded: its rows are prepared (task hash, brief uploaded) and nothing is paid yet. */
export interface FundingEvent {
  rows: Array<{ index: number; taskHash: string; indexParams: Omit<IndexParams, "txHash"> }>;
  /** Nonce the funding transaction will use. */
  nonce: number;
}

export interface FundedEvent {
  txHash: string;
  rows: Array<{ index: number; taskHash: string; indexParams: IndexParams }>;
}

export interface PostTasksOptions {
  /** Refuse before spending anything when the total escrow is above this (raw units). */
  maxTotalRaw?: bigint | string;
  /** Tasks per funding transaction when the escrow has batch creation (default 20, at most its limit). */
  chunkSize?: number;
  /** Before each funding transaction is sent (journal the prepared rows here to resume safely). */
  onFunding?: (event: FundingEvent) => void | Promise<void>;
  /** After each funding transaction is mined, before its rows are listed. */
  onFunded?: (event: FundedEvent) => void | Promise<void>;
  /** After each row reaches its final status in this run. */
  onProgress?: (event: { done: number; total: number; result: PostResult }) => void | Promise<void>;
}

/** A row checked and typed, before its brief is encrypted or anything is sent. */
export interface CheckedRow {
  index: number;
  row: BulkRow;
  verificationMode: "auto" | "manual" | "agent";
  verificationCriteria?: VerificationCriteria;
  verifierAddress?: string;
}

/** The column values of an input, so object rows pass the same checks as file rows. */
function columnsOf(input: PostTaskInput): RowValues {
  const values = new Map<BulkColumn, unknown>();
  values.set("instructions", input.instructions);
  if (input.amountRaw !== undefined) values.set("amount", typeof input.amountRaw === "bigint" ? input.amountRaw.toString() : input.amountRaw);
  if (input.reward !== undefined) values.set("reward", input.reward);
  if (input.durationSeconds !== undefined) values.set("duration", input.durationSeconds);
  if (input.privacy !== undefined) values.set("privacy", input.privacy);
  if (input.verificationMode !== undefined && input.verificationMode !== "agent") values.set("verification", input.verificationMode);
  if (input.zone !== undefined) values.set("zone", input.zone);
  if (input.routingSummary !== undefined) values.set("routing_summary", input.routingSummary);
  if (input.capabilities !== undefined) values.set("capabilities", input.capabilities);
  if (input.targetExecutor !== undefined) values.set("target", input.targetExecutor);
  return values;
}

/**
 * Every row checked before anything is sent: the bulk-row rules of core/bulk, the verification fields, and the same
 * public brief twice. Any bad row refuses the whole call with `INVALID_ROWS` and one entry per problem in
 * `body.errors`.
 */
export function checkRows(inputs: readonly PostTaskInput[], options: { allowAgentMode: boolean; maxRows?: number }): CheckedRow[] {
  const maxRows = options.maxRows ?? MAX_BULK_ROWS;
  if (inputs.length === 0) throw clientError("INVALID_ROWS", "No rows to post.", { errors: [] });
  if (inputs.length > maxRows) {
    throw clientError("INVALID_ROWS", `At most ${maxRows} rows per call; got ${inputs.length}.`, {
      errors: [{ index: maxRows, code: "TOO_MANY_ROWS", message: `at most ${maxRows} rows per call` }],
    });
  }
  const { rows, errors } = checkBulkRows(inputs.map((input, index) => ({ line: index + 1, values: columnsOf(input) })));
  const rowErrors: RowError[] = errors.map((e) => ({ index: e.line - 1, ...(e.column ? { column: e.column } : {}), code: e.code, message: e.message }));
  const byLine = new Map(rows.map((row) => [row.line, row]));
  const checked: CheckedRow[] = [];
  inputs.forEach((input, index) => {
    const fail = (column: string, code: string, message: string) => rowErrors.push({ index, column, code, message });
    const mode = input.verificationMode ?? "auto";
    if (mode === "agent") {
      if (!options.allowAgentMode) fail("verificationMode", "INVALID_VERIFICATION", "bulk rows are verified auto or manual");
      else if (!input.verifierAddress) fail("verifierAddress", "VERIFIER_REQUIRED", "agent verification needs verifierAddress");
    } else if (input.verifierAddress !== undefined) {
      fail("verifierAddress", "VERIFIER_MODE_MISMATCH", "verifierAddress is only for agent verification");
    }
    let verifierAddress: string | undefined;
    if (input.verifierAddress !== undefined) {
      const parsed = parseAgentAddress(input.verifierAddress);
      if (parsed.ok) verifierAddress = parsed.value;
      else fail("verifierAddress", parsed.code, parsed.message);
    }
    const criteria = input.verificationCriteria ?? (mode === "auto" ? { ...BULK_AUTO_CRITERIA } : undefined);
    for (const issue of validateCriteria(criteria, mode)) fail(issue.field, issue.code, issue.message);
    const row = byLine.get(index + 1);
    if (row) checked.push({ index, row, verificationMode: mode, ...(criteria ? { verificationCriteria: criteria } : {}), ...(verifierAddress ? { verifierAddress } : {}) });
  });
  if (rowErrors.length > 0) {
    rowErrors.sort((a, b) => a.index - b.index);
    throw clientError("INVALID_ROWS", `${new Set(rowErrors.map((e) => e.index)).size} of ${inputs.length} rows are invalid; nothing was sent.`, {
      errors: rowErrors,
    });
  }
  return checked;
}

type Executor = Pick<AgentProfile, "address" | "publicKey">;

export interface PostingContext {
  http: Http;
  settlement: Settlement;
  chain: ChainWallet;
}

/** Agents on the posting chain with a public key and every tag, per capability set (one lookup per set). */
async function executorsFor(ctx: PostingContext, rows: readonly CheckedRow[]): Promise<Map<string, Executor[]>> {
  const sets = new Map<string, Executor[]>();
  for (const { row } of rows) {
    if (row.privacy !== "private") continue;
    const key = [...row.capabilities].sort().join(",");
    if (sets.has(key)) continue;
    const query = new URLSearchParams({ chain: ctx.settlement.chain, ...(key ? { capabilities: key } : {}) });
    const { executors } = await ctx.http.get<ExecutorsAnswer>(`/api/v1/a2a/executors?${query}`);
    sets.set(key, executors.filter((e) => e.publicKey));
  }
  return sets;
}

/** A row made ready to fund: the task hash, and for a private brief its ciphertext uploaded and key wrapped. */
async function prepare(ctx: PostingContext, checked: CheckedRow, executors: Map<string, Executor[]>): Promise<Omit<IndexParams, "txHash">> {
  const { row } = checked;
  const common = {
    verificationMode: checked.verificationMode,
    ...(checked.verificationCriteria ? { verificationCriteria: checked.verificationCriteria } : {}),
    ...(checked.verifierAddress ? { verifierAddress: checked.verifierAddress } : {}),
    requiredCapabilities: row.capabilities,
    ...(row.routingSummary ? { routingSummary: row.routingSummary } : {}),
    locationZone: row.zone,
    ...(row.target ? { targetExecutor: row.target } : {}),
  };
  if (row.privacy === "public") return { taskHash: publicTaskHash(row.instructions), privacy: "public", publicBrief: row.instructions, ...common };
  let recipients = executors.get([...row.capabilities].sort().join(",")) ?? [];
  if (row.target) recipients = recipients.filter((e) => e.address === row.target);
  const verifier = checked.verifierAddress;
  const encrypted = encryptBrief(row.instructions);
  // The task hash is the client's own SHA-256 of the ciphertext, never the storage's word for it.
  const taskHash = privateTaskHash(encrypted.ciphertext);
  const { rootHash } = await ctx.http.post<Uploaded>("/api/v1/storage/upload", { data: Buffer.from(encrypted.ciphertext).toString("base64") });
  const rootHex = rootHash.replace(/^0x/i, "").toLowerCase();
  if (/^[0-9a-f]{64}$/.test(rootHex) && `0x${rootHex}` !== taskHash) {
    throw clientError("STORAGE_MISMATCH", `The storage stored the brief as ${rootHash}, not as its SHA-256 ${taskHash}; nothing was paid for it.`);
  }
  const wrappedKeys: Record<string, string> = {};
  for (const agent of recipients) wrappedKeys[agent.address] = wrapBriefKey(encrypted.key, agent.publicKey!);
  if (verifier) {
    const verifierKey = (await ctx.http.get<AgentAnswer>(`/api/v1/a2a/executors/${verifier}`)).profile.publicKey;
    if (!verifierKey) throw clientError("INVALID_ROWS", `The verifier ${verifier} has no public key.`);
    wrappedKeys[verifier] = wrapBriefKey(encrypted.key, verifierKey);
  }
  return { taskHash, privacy: "private", rootHash, wrappedKeys, ...common };
}

/** The createTask or createTasks call the client expects for these prepared rows. */
function fundingCall(ctx: PostingContext, rows: Array<{ checked: CheckedRow; params: Omit<IndexParams, "txHash"> }>): string {
  const entry = ({ checked, params }: (typeof rows)[number]) => ({
    taskHash: params.taskHash,
    token: ctx.chain.token,
    amount: checked.row.amount,
    duration: BigInt(checked.row.durationSeconds),
    verifier: params.verifierAddress ?? ZeroAddress,
  });
  const single = rows.length === 1 ? entry(rows[0]!) : undefined;
  return single
    ? escrowInterface.encodeFunctionData("createTask", [single.taskHash, single.token, single.amount, single.duration, single.verifier])
    : escrowInterface.encodeFunctionData("createTasks", [rows.map(entry)]);
}

/** The API body that builds the funding of a prepared row. */
function buildBody(checked: CheckedRow, params: Omit<IndexParams, "txHash">) {
  return { ...params, amount: checked.row.amount.toString(), duration: checked.row.durationSeconds };
}

/**
 * Posts checked rows: approves the escrow once for the total, funds per chunk (one createTasks per chunk when the
 * escrow has batch creation, else one createTask per task), and lists each funded task. A row the API refuses before
 * funding fails alone with nothing paid; a funding or listing failure stops the run. Rows funded but not listed come
 * back `unlisted` with `indexParams`.
 */
export async function postRows(ctx: PostingContext, rows: readonly CheckedRow[], total: number, options: PostTasksOptions): Promise<PostTasksResult> {
  const timings = { checkMs: 0, prepareMs: 0, fundMs: 0, listMs: 0 };
  const timed = async <T>(phase: keyof typeof timings, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work();
    } finally {
      timings[phase] += performance.now() - started;
    }
  };
  const results = new Map<number, PostResult>();
  const settleRow = async (result: PostResult) => {
    results.set(result.index, result);
    await options.onProgress?.({ done: results.size, total, result });
  };
  const base = (c: CheckedRow) => ({ index: c.index, amountRaw: c.row.amount.toString(), privacy: c.row.privacy });

  const totalRaw = rows.reduce((sum, c) => sum + c.row.amount, 0n);
  if (options.maxTotalRaw !== undefined && totalRaw > BigInt(options.maxTotalRaw)) {
    throw clientError("SPEND_LIMIT", `The total escrow ${totalRaw} is above maxTotalRaw ${options.maxTotalRaw}; nothing was spent.`);
  }
  const executors = await timed("checkMs", () => executorsFor(ctx, rows));
  const unreachable = rows.filter((c) => {
    if (c.row.privacy !== "private") return false;
    const agents = executors.get([...c.row.capabilities].sort().join(",")) ?? [];
    return c.row.target ? !agents.some((a) => a.address === c.row.target) : agents.length === 0;
  });
  if (unreachable.length > 0) {
    throw clientError("INVALID_ROWS", "No registered agent on the posting chain can open some private briefs; nothing was sent.", {
      errors: unreachable.map((c) => ({ index: c.index, column: "capabilities", code: "NO_EXECUTORS", message: "no agent with a public key and these capabilities is registered on the chain" })),
    });
  }

  const { supported, maxBatch } = ctx.settlement.batchCreate;
  const chunkSize = supported ? Math.max(1, Math.min(options.chunkSize ?? BATCH_CHUNK_SIZE, maxBatch)) : 1;
  let approved = false;
  let stopped = false;

  // Briefs of the next chunk are prepared (encrypted, uploaded, keys wrapped) while the current one is funded and
  // listed: preparing spends nothing, and the client's CPU work overlaps the chain's and the service's.
  const prepareChunk = (start: number) =>
    timed("prepareMs", () =>
      Promise.all(rows.slice(start, start + chunkSize).map(async (checked) => ({ checked, params: await prepare(ctx, checked, executors) }))),
    );
  let next = rows.length > 0 ? prepareChunk(0) : undefined;
  for (let start = 0; start < rows.length && !stopped; start += chunkSize) {
    let chunk: Awaited<ReturnType<typeof prepareChunk>> = [];
    let plan: Pick<BuiltTask, "unsignedTx"> | undefined;
    let expected: { to: string; data: string };
    let nonce: number;
    let fundingStarted: number;
    try {
      chunk = await next!;
      fundingStarted = performance.now();
      next = start + chunkSize < rows.length ? prepareChunk(start + chunkSize) : undefined;
      next?.catch(() => undefined); // awaited in the next iteration, or dropped when the run stops

      // Build through the API: it checks each task (hash in use, pinned agent...) before anything is paid.
      while (chunk.length > 0 && !plan) {
        try {
          plan =
            chunk.length === 1
              ? await ctx.http.post<BuiltTask>("/api/v1/tasks", buildBody(chunk[0]!.checked, chunk[0]!.params))
              : await ctx.http.post<BuiltBatch>("/api/v1/tasks/batch", { tasks: chunk.map((r) => buildBody(r.checked, r.params)) });
        } catch (error) {
          if (!(error instanceof ApiError) || error.status >= 500 || error.status === 0) throw error;
          const refused = new Map<number, { code: string; message: string }>();
          if (chunk.length === 1) refused.set(0, { code: error.code, message: error.message });
          else if (error.code === "INVALID_ROWS") {
            for (const d of error.body.details ?? []) {
              const i = Number(d.index);
              if (Number.isInteger(i) && i >= 0 && i < chunk.length) refused.set(i, { code: String(d.code), message: String(d.message) });
            }
          }
          // A refusal naming no row of the chunk fails the whole chunk (asking again would be refused again).
          if (refused.size === 0) throw error;
          for (const [i, e] of refused) await settleRow({ ...base(chunk[i]!.checked), status: "failed", taskHash: chunk[i]!.params.taskHash, error: e });
          chunk = chunk.filter((_, i) => !refused.has(i));
        }
      }
      if (!plan || chunk.length === 0) continue;

      if (!approved) {
        approved = true;
        const remaining = rows.slice(start).reduce((sum, c) => sum + c.row.amount, 0n);
        const allowance = BigInt(await ctx.chain.provider.call({ to: ctx.chain.token, data: erc20Interface.encodeFunctionData("allowance", [ctx.chain.wallet.address, ctx.chain.escrow]) }));
        if (allowance < remaining) {
          await ctx.chain.send(null, { to: ctx.chain.token, data: erc20Interface.encodeFunctionData("approve", [ctx.chain.escrow, remaining]) });
        }
      }

      expected = { to: ctx.chain.escrow, data: fundingCall(ctx, chunk) };
      nonce = await ctx.chain.provider.getTransactionCount(ctx.chain.wallet.address, "pending");
      await options.onFunding?.({ rows: chunk.map((r) => ({ index: r.checked.index, taskHash: r.params.taskHash, indexParams: r.params })), nonce });
    } catch (error) {
      // Nothing of this chunk is paid (preparing, building, approving or journaling it failed): its rows fail and the
      // run stops. Never thrown: earlier chunks may be paid, and the caller must learn which rows were.
      const e = error instanceof ApiError ? error : { code: "INTERNAL_ERROR", message: (error as Error).message };
      const unpaid = chunk.length > 0 ? chunk : rows.slice(start, start + chunkSize).filter((c) => !results.has(c.index)).map((checked) => ({ checked, params: undefined }));
      for (const r of unpaid) {
        await settleRow({ ...base(r.checked), status: "failed", ...(r.params ? { taskHash: r.params.taskHash } : {}), error: { code: e.code, message: e.message } });
      }
      stopped = true;
      break;
    }

    let txHash: string;
    try {
      // Sent at exactly the nonce onFunding was told, so a journal of it can tell sent from never sent.
      txHash = (await ctx.chain.send(plan.unsignedTx, expected, { nonce })).hash;
    } catch (error) {
      const e = error instanceof ApiError ? error : new ApiError(0, "TX_FAILED", (error as Error).message);
      stopped = true;
      if (e.code === "TX_UNCONFIRMED") {
        // Sent, fate unknown: the rows may be paid. They come back unlisted with their indexParams (indexTask lists
        // them once the transaction is mined); posting them again could pay twice.
        const sentHash = String(e.body.txHash);
        for (const r of chunk) {
          await settleRow({ ...base(r.checked), status: "unlisted", taskHash: r.params.taskHash, txHash: sentHash, indexParams: { ...r.params, txHash: sentHash }, error: { code: e.code, message: e.message } });
        }
        break;
      }
      // A guard refusal, a funding that reverted or one never sent pays nothing.
      for (const r of chunk) await settleRow({ ...base(r.checked), status: "failed", taskHash: r.params.taskHash, error: { code: e.code, message: e.message } });
      break;
    }
    timings.fundMs += performance.now() - fundingStarted;
    const funded = chunk.map((r) => ({ index: r.checked.index, taskHash: r.params.taskHash, indexParams: { ...r.params, txHash } }));
    await options.onFunded?.({ txHash, rows: funded });

    const outcomes = await timed("listMs", () => listFunded(ctx, txHash, funded.map((f) => f.indexParams)));
    for (const [i, r] of chunk.entries()) {
      const outcome = outcomes[i]!;
      const result: PostResult = { ...base(r.checked), taskHash: r.params.taskHash, txHash, status: outcome.ok ? "posted" : "unlisted" };
      if (!outcome.ok) {
        result.indexParams = funded[i]!.indexParams;
        result.error = outcome.error;
        stopped = true;
      }
      await settleRow(result);
    }
  }

  for (const checked of rows) if (!results.has(checked.index)) await settleRow({ ...base(checked), status: "skipped" });
  const all = [...results.values()].sort((a, b) => a.index - b.index);
  const count = (status: PostStatus) => all.filter((r) => r.status === status).length;
  const round = (ms: number) => Math.round(ms);
  return {
    posted: count("posted"),
    unlisted: count("unlisted"),
    failed: count("failed"),
    skipped: count("skipped"),
    stopped,
    totalRaw: totalRaw.toString(),
    results: all,
    timings: { checkMs: round(timings.checkMs), prepareMs: round(timings.prepareMs), fundMs: round(timings.fundMs), listMs: round(timings.listMs) },
  };
}

type ListOutcome = { ok: true; status: "listed" | "already_listed" } | { ok: false; error: { code: string; message: string } };
type Listed = ListingOutcome;

/** Lists funded tasks (one receipt): each item succeeds or fails on its own. */
export async function listFunded(ctx: Pick<PostingContext, "http">, txHash: string, params: IndexParams[]): Promise<ListOutcome[]> {
  if (params.length === 1) {
    try {
      const { status } = await ctx.http.post<Listed>("/api/v1/a2a/tasks/index", params[0]);
      return [{ ok: true, status }];
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return [{ ok: false, error: { code: error.code, message: error.message } }];
    }
  }
  const tasks = params.map(({ txHash: _tx, ...fields }) => fields);
  try {
    const { results } = await ctx.http.post<Extract<IndexAnswer, { results: unknown }>>("/api/v1/a2a/tasks/index", { txHash, tasks });
    return results.map(({ status }) => ({ ok: true, status }));
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const details = error.code === "INDEX_FAILED" ? (error.body.details ?? []) : [];
    if (details.length !== params.length) return params.map(() => ({ ok: false, error: { code: error.code, message: error.message } }));
    return details.map((d) =>
      d.status === "failed" ? { ok: false, error: { code: String(d.code), message: String(d.message) } } : { ok: true, status: d.status === "already_listed" ? "already_listed" : "listed" },
    );
  }
}

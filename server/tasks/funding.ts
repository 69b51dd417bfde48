import { getAddress, ZeroAddress } from "ethers";
import { IERC20__factory, TaskEscrow__factory } from "../../typechain-types";
import { chainCall, type Chain } from "../chains";
import type { Db } from "../db";
import { batchTermsDeps, checkRental, checkTerms, type TaskTerms, type TermsDeps } from "./terms";
import { minRewardRefusal } from "../agents";
import { asAddress, asTaskHash, type BuildTaskBody, type BuiltBatch, type BuiltTask, type FundingPlan, type UnsignedTx } from "@market/core/api";
import { MarketError, type ErrorDetail } from "@market/core/errors";
import { parseRawAmount } from "@market/core/money";
import { parseDuration } from "@market/core/task-fields";
import { fundingCalldata, MAX_BATCH, MAX_TASK_AMOUNT } from "@market/core/escrow";

/** The escrow stores amounts in 96 bits (core/escrow); a larger amount would revert at funding. */
export const MAX_ESCROW_AMOUNT = MAX_TASK_AMOUNT;
/** Largest batch the server builds, whatever the escrow says of itself: the escrow's own limit (core/escrow). */
export const SERVER_MAX_BATCH = MAX_BATCH;

const erc20 = IERC20__factory.createInterface();

interface FundedTerms extends TaskTerms {
  amount: bigint;
  duration: number;
}

export function checkAmount(text: string): bigint {
  const amount = parseRawAmount(text);
  if (!amount.ok) throw new MarketError("INVALID_AMOUNT", amount.message);
  if (amount.value > MAX_ESCROW_AMOUNT) {
    throw new MarketError("INVALID_AMOUNT", `The escrow holds at most ${MAX_ESCROW_AMOUNT} raw units per task.`);
  }
  return amount.value;
}

export function checkDuration(value: number | string): number {
  const seconds = parseDuration(value);
  if (!seconds.ok) throw new MarketError("INVALID_DURATION", seconds.message);
  return seconds.value;
}

export type Funding = ReturnType<typeof createFunding>;

/** getTask(bytes32)'s selector: a funding's check reads only the first word of its answer. */
const GET_TASK = TaskEscrow__factory.createInterface().getFunction("getTask").selector;
/** getTask answers a Task of ten static words, `poster` first (ITaskEscrow.Task). */
const TASK_WORDS = 10;

/**
 * The wallet that funded the task hash on chain (the zero address when none did): the first word of getTask's
 * answer, read without decoding the whole Task (each address of it costs a checksum); an answer of another shape is
 * decoded by the contract's ABI, which refuses it as before.
 */
async function posterOnChain(chain: Chain, taskHash: string): Promise<string> {
  if (/^0x[0-9a-f]{64}$/.test(taskHash)) {
    const answer = await chainCall(() => chain.provider.call({ to: chain.config.escrow, data: `${GET_TASK}${taskHash.slice(2)}` }));
    if (answer.length === 2 + 64 * TASK_WORDS && /^0x0{24}[0-9a-fA-F]{40}/.test(answer)) {
      const word = answer.slice(26, 66);
      return /^0+$/.test(word) ? ZeroAddress : getAddress(`0x${word}`);
    }
  }
  return (await chainCall(() => chain.escrow.getTask(taskHash))).poster;
}

/** Builds unsigned funding transactions for the poster's wallet after every posting rule passed. */
export function createFunding({ db, deps }: { db: Db; deps: TermsDeps }) {
  /** A task hash must be new everywhere: not listed, and not funded by anyone on chain. */
  async function requireUnusedHash(chain: Chain, taskHash: string, poster: string) {
    const listed = await db.selectFrom("listings").select("task_hash").where("task_hash", "=", taskHash).executeTakeFirst();
    if (listed) throw new MarketError("TASK_HASH_IN_USE");
    await requireUnfunded(chain, taskHash, poster);
  }

  /** A task hash must not be funded on chain by anyone. */
  async function requireUnfunded(chain: Chain, taskHash: string, poster: string) {
    const funder = await posterOnChain(chain, taskHash);
    if (funder !== ZeroAddress) {
      if (funder === poster) {
        throw new MarketError("TASK_HASH_IN_USE", "You already funded this task hash; list it with POST /api/v1/a2a/tasks/index.");
      }
      throw new MarketError("TASK_HASH_CLAIMED");
    }
  }

  /**
   * The refusals of a batch's tasks funded on chain by anyone, by index. A createTasks of them all from the poster
   * that runs (an eth_call, nothing sent) proves none is (the escrow refuses a used hash, TaskHashUsed): one call for
   * the batch. Where it does not run (not approved yet, or any other refusal), each task is read (getTask).
   */
  async function fundedRefusals(chain: Chain, poster: string, tasks: ReadonlyMap<number, FundedTerms>): Promise<Map<number, unknown>> {
    const refusals = new Map<number, unknown>();
    const all = [...tasks.values()];
    if (all.length > 1 && new Set(all.map((t) => t.taskHash)).size === all.length) {
      const runs = await chain.provider.call({ from: poster, to: chain.config.escrow, data: fundingCall(chain, all) }).then(
        () => true,
        () => false,
      );
      if (runs) return refusals;
    }
    await Promise.all(
      [...tasks].map(([index, t]) => requireUnfunded(chain, t.taskHash, poster).catch((error: unknown) => refusals.set(index, error))),
    );
    return refusals;
  }

  async function checkOne(
    body: BuildTaskBody,
    poster: string,
    chain: Chain,
    checkDeps: TermsDeps = deps,
    batch?: { listed: ReadonlySet<string> },
  ): Promise<FundedTerms> {
    const amount = checkAmount(body.amount);
    const duration = checkDuration(body.duration);
    const terms = await checkTerms(body, poster, chain, checkDeps);
    await checkRental(terms, { amount, durationSeconds: duration }, checkDeps);
    if (terms.targetExecutor) {
      // Refused before anything is paid: the pinned agent could never accept it.
      const target = await checkDeps.agents.get(terms.targetExecutor);
      const belowMinimum = minRewardRefusal(target?.minReward ?? null, amount, terms.serviceId);
      if (belowMinimum) throw belowMinimum;
    }
    // A batch's tasks are looked up on chain together once each passed every other check (buildBatch).
    if (batch) {
      if (batch.listed.has(terms.taskHash)) throw new MarketError("TASK_HASH_IN_USE");
    } else await requireUnusedHash(chain, terms.taskHash, poster);
    return { ...terms, amount, duration };
  }

  /** The createTask call of one task, the createTasks call of several. */
  function fundingCall(chain: Chain, tasks: readonly FundedTerms[]): string {
    return fundingCalldata(
      tasks.map((t) => ({
        taskHash: t.taskHash,
        token: chain.config.token,
        amount: t.amount,
        duration: BigInt(t.duration),
        verifier: t.verifierAddress ?? ZeroAddress,
      })),
    );
  }

  async function plan(chain: Chain, poster: string, tasks: FundedTerms[]): Promise<FundingPlan> {
    const total = tasks.reduce((sum, t) => sum + t.amount, 0n);
    const escrowAddress = chain.config.escrow;
    const data = fundingCall(chain, tasks);
    const tx = (to: string, txData: string): UnsignedTx => ({
      chainId: chain.config.chainId,
      from: asAddress(poster),
      to: asAddress(to),
      data: txData,
      value: "0",
    });
    const token = IERC20__factory.connect(chain.config.token, chain.provider);
    const allowance = await chainCall(() => token.allowance(poster, escrowAddress));
    const approveTx = allowance >= total ? null : tx(chain.config.token, erc20.encodeFunctionData("approve", [escrowAddress, total]));
    const unsignedTx = tx(escrowAddress, data);
    return {
      chain: chain.name,
      chainId: chain.config.chainId,
      escrowAddress: asAddress(escrowAddress),
      token: asAddress(chain.config.token),
      from: asAddress(poster),
      total: total.toString(),
      unsignedTx,
      approveTx,
      transactions: approveTx ? [approveTx, unsignedTx] : [unsignedTx],
    };
  }

  return {
    async buildOne(body: BuildTaskBody, poster: string, chain: Chain): Promise<BuiltTask> {
      const terms = await checkOne(body, poster, chain);
      return { taskHash: asTaskHash(terms.taskHash), ...(await plan(chain, poster, [terms])) };
    },

    /** Up to the escrow's batch limit in one createTasks call; any bad task refuses the whole batch. */
    async buildBatch(bodies: BuildTaskBody[], poster: string, chain: Chain): Promise<BuiltBatch> {
      const { supported, maxBatch } = await chain.batchCreate();
      if (!supported) throw new MarketError("BATCH_UNSUPPORTED");
      const limit = Math.min(maxBatch, SERVER_MAX_BATCH);
      if (bodies.length > limit) throw new MarketError("BATCH_TOO_LARGE", `At most ${limit} tasks per batch on ${chain.name}.`);
      const seen = new Set<string>();
      const details: ErrorDetail[] = [];
      const terms: FundedTerms[] = [];
      // Every task is checked at once (each check reads the chain and the blob store); outcomes are taken in order.
      const batchDeps = batchTermsDeps(deps);
      // The batch's listed hashes in one read, not one per task.
      const hashes = bodies.map((body) => body.taskHash.toLowerCase());
      const listed = new Set(
        (await db.selectFrom("listings").select("task_hash").where("task_hash", "in", hashes).execute()).map((r) => r.task_hash),
      );
      const checks = await Promise.allSettled(bodies.map((body) => checkOne(body, poster, chain, batchDeps, { listed })));
      // Then the tasks that passed, on chain: a task's refusal is its first, as checkOne of one task finds it.
      const passed = new Map<number, FundedTerms>();
      for (const [index, check] of checks.entries()) if (check.status === "fulfilled") passed.set(index, check.value);
      const funded = await fundedRefusals(chain, poster, passed);
      for (const [index, body] of bodies.entries()) {
        const check = checks[index]!;
        try {
          if (check.status === "rejected") throw check.reason;
          if (funded.has(index)) throw funded.get(index);
          const checked = check.value;
          if (seen.has(checked.taskHash)) throw new MarketError("DUPLICATE_TASK_HASH");
          seen.add(checked.taskHash);
          terms.push(checked);
        } catch (error) {
          if (!(error instanceof MarketError) || error.status >= 500) throw error;
          details.push({ index, taskHash: body.taskHash, code: error.code, message: error.message });
        }
      }
      if (details.length > 0) throw new MarketError("INVALID_ROWS", `${details.length} of ${bodies.length} tasks refused.`, { details });
      return { taskHashes: terms.map((t) => asTaskHash(t.taskHash)), ...(await plan(chain, poster, terms)) };
    },
  };
}

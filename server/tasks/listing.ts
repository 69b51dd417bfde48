import { getAddress, ZeroAddress, type Log, type TransactionReceipt } from "ethers";
import { chainCall, type Chain } from "../chains";
import { isUniqueViolation, type Db } from "../db";
import type { Listing, ListingWithAmount } from "../db/schema";
import { batchTermsDeps, checkRental, checkTerms, type TaskTerms, type TermsDeps } from "./terms";
import { listedFields, listingRow, type ListedFields } from "./listing-codec";
import { appendEvents, holdLog, listedDraft } from "../events";
import type { Clock } from "../http/types";
import { asTaskHash, type ListingOutcome, type TaskFieldsInput } from "@market/core/api";
import { answeredCode, MarketError, type ErrorDetail } from "@market/core/errors";
import { decodeEscrowEvent, EscrowStatus, isOpen, snapshotFromView } from "@market/core/escrow";

/** What the funding receipt says about one task. */
interface Funded {
  taskHash: string;
  poster: string;
  token: string;
  amount: bigint;
  deadline: bigint;
  verifier: string;
  /** The block that funded it (its timestamp is when the deadline's duration began). */
  blockNumber: number;
  /** No escrow event has named the task since its TaskCreated (as `markUntouched` read the logs): still as funded. */
  untouched?: boolean;
}

export type ListingResult = ListingOutcome;

export type Listings = ReturnType<typeof createListings>;

/**
 * Lists funded tasks. A task is listed only after its funding receipt is checked: sent by the caller's wallet, from
 * the chain's escrow, carrying the task's `TaskCreated`. The first listing fixes the task's properties.
 */
export function createListings({
  db,
  deps,
  now,
  onListed,
}: {
  db: Db;
  deps: TermsDeps;
  now: Clock;
  /** Runs after a first listing commits (e.g. opening the exclusive offer); its failure does not undo the listing. */
  onListed?: (listing: ListingWithAmount, deadline: number) => Promise<unknown>;
}) {
  async function receiptOf(chain: Chain, txHash: string, wallet: string): Promise<Map<string, Funded>> {
    const receipt: TransactionReceipt | null = await chainCall(() => chain.provider.getTransactionReceipt(txHash));
    if (!receipt) throw new MarketError("TX_NOT_FOUND");
    if (receipt.status !== 1) throw new MarketError("TX_REVERTED");
    if (getAddress(receipt.from) !== wallet) {
      throw new MarketError(
        "FUNDING_WALLET_MISMATCH",
        `The funding transaction was sent by ${getAddress(receipt.from)}, not by the API key's wallet ${wallet}; cancel the escrow from the funding wallet.`,
      );
    }
    const funded = new Map<string, Funded>();
    for (const log of receipt.logs) {
      if (getAddress(log.address) !== chain.config.escrow) continue;
      const event = decodeEscrowEvent(log.topics, log.data);
      if (event?.event !== "TaskCreated") continue;
      const { taskHash, poster, token, amount, deadline, verifier } = event.args;
      funded.set(taskHash.toLowerCase(), {
        taskHash: taskHash.toLowerCase(),
        poster,
        token,
        amount: BigInt(amount),
        deadline: BigInt(deadline),
        verifier,
        blockNumber: receipt.blockNumber,
      });
    }
    return funded;
  }

  /**
   * Marks the receipt's tasks that no escrow event has named since their TaskCreated, with one log query for the whole
   * receipt (its block to the latest) instead of a read of each task: every change of a task's status emits an event
   * naming it (what the indexer's projection rests on), and its deadline moves only with a pause of the escrow, so
   * such a task, with no pause since, is still Funded with the deadline its TaskCreated gave. A query the node refuses
   * marks none, and each task is then read.
   */
  async function markUntouched(chain: Chain, txHash: string, funded: Map<string, Funded>): Promise<void> {
    const first = funded.values().next().value;
    if (!first) return;
    const range = { address: chain.config.escrow, fromBlock: first.blockNumber, toBlock: "latest" };
    const pauses = [chain.escrow.interface.getEvent("EscrowPausedAt").topicHash, chain.escrow.interface.getEvent("EscrowUnpaused").topicHash];
    let named: Log[];
    let paused: Log[];
    try {
      [named, paused] = await Promise.all([
        chain.provider.getLogs({ ...range, topics: [null, [...funded.keys()]] }),
        chain.provider.getLogs({ ...range, topics: [pauses] }),
      ]);
    } catch {
      return;
    }
    if (paused.length > 0) return;
    const touched = new Set<string>();
    for (const log of named) {
      const own = log.transactionHash.toLowerCase() === txHash.toLowerCase() && decodeEscrowEvent(log.topics, log.data)?.event === "TaskCreated";
      if (!own) touched.add(log.topics[1]!.toLowerCase());
    }
    for (const [taskHash, task] of funded) task.untouched = !touched.has(taskHash);
  }

  /** Whether the task is open on chain, and its deadline: as funded when untouched since, else as the escrow answers. */
  async function openNow(chain: Chain, taskHash: string, funded: Funded): Promise<{ open: boolean; deadline: number }> {
    const at = Math.floor(now() / 1000);
    if (funded.untouched) {
      const deadline = Number(funded.deadline);
      return { open: isOpen({ status: EscrowStatus.Funded, deadline }, at), deadline };
    }
    const task = snapshotFromView(taskHash, await chainCall(() => chain.escrow.getTask(taskHash)));
    return { open: task !== undefined && isOpen(task, at), deadline: task?.deadline ?? 0 };
  }

  async function listFunded(
    chain: Chain,
    wallet: string,
    txHash: string,
    input: TaskFieldsInput,
    funded: Funded | undefined,
    checkDeps: TermsDeps = deps,
  ): Promise<ListingResult> {
    const taskHash = input.taskHash.toLowerCase();
    if (!funded) throw new MarketError("NOT_IN_RECEIPT", `The receipt carries no TaskCreated for ${taskHash} from the escrow.`);
    if (funded.poster !== wallet) throw new MarketError("FUNDING_WALLET_MISMATCH", `The task was funded by ${funded.poster}, not by ${wallet}.`);
    if (funded.token !== chain.config.token)
      throw new MarketError("TOKEN_NOT_SETTLEMENT", "The task was funded with a token other than the settlement token.");
    const terms = await checkTerms(input, wallet, chain, checkDeps);
    const verifier = funded.verifier === ZeroAddress ? null : funded.verifier;
    if (terms.verifierAddress !== verifier) {
      throw new MarketError(
        "VERIFIER_MODE_MISMATCH",
        verifier
          ? `The escrow names verifier ${verifier}: the mode must be agent with that verifierAddress.`
          : "The escrow names no verifier: the mode cannot be agent.",
      );
    }

    const existing = await db.selectFrom("listings").selectAll().where("task_hash", "=", taskHash).executeTakeFirst();
    if (existing) return sameListing(existing, terms);
    // A first listing only: a rental listed before keeps what it escrowed whatever its service does since.
    if (terms.serviceId !== null) {
      const block = await chainCall(() => chain.provider.getBlock(funded.blockNumber));
      if (!block) throw new MarketError("CHAIN_UNAVAILABLE", `The chain did not answer block ${funded.blockNumber}.`);
      await checkRental(terms, { amount: funded.amount, durationSeconds: Number(funded.deadline) - block.timestamp }, checkDeps);
    }

    const { open, deadline } = await openNow(chain, taskHash, funded);
    if (!open) {
      throw new MarketError("NOT_OPEN", "The task is no longer open on chain (assigned, cancelled or past its deadline).");
    }

    try {
      await db.transaction().execute(async (trx) => {
        // The log first: whichever of this listing and the indexing of its funding commits second sees the other.
        await holdLog(trx, chain.name);
        const row = listingRow(terms, {
          taskHash,
          chain: chain.name,
          poster: wallet,
          token: funded.token,
          fundingTx: txHash,
          listedAt: now(),
        });
        await trx.insertInto("listings").values(row).execute();
        if (terms.requiredCapabilities.length > 0) {
          await trx
            .insertInto("listing_capabilities")
            .values(terms.requiredCapabilities.map((tag) => ({ task_hash: taskHash, tag })))
            .execute();
        }
        const keys = Object.entries(terms.wrappedKeys);
        if (keys.length > 0) {
          await trx
            .insertInto("task_keys")
            .values(keys.map(([agent_address, wrapped_key]) => ({ task_hash: taskHash, agent_address, wrapped_key })))
            .execute();
        }
        // Listed for workers once the task is also indexed (a browse shows it then); else its indexing says so.
        const indexed = await trx
          .selectFrom("escrow_tasks")
          .select("task_hash")
          .where("chain", "=", chain.name)
          .where("task_hash", "=", taskHash)
          .executeTakeFirst();
        if (indexed)
          await appendEvents(
            trx,
            chain.name,
            [listedDraft({ ...row, amount: funded.amount.toString() }, Object.keys(terms.wrappedKeys), deadline)],
            now(),
          );
      });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // Listed concurrently by another request: the first listing decides.
      const winner = await db.selectFrom("listings").selectAll().where("task_hash", "=", taskHash).executeTakeFirstOrThrow();
      return sameListing(winner, terms);
    }
    if (onListed) {
      const listing = await db.selectFrom("listings").selectAll().where("task_hash", "=", taskHash).executeTakeFirstOrThrow();
      await onListed({ ...listing, amount: funded.amount.toString() }, deadline).catch(() => undefined);
    }
    return { taskHash: asTaskHash(taskHash), status: "listed" };
  }

  /**
   * Listing again with the same properties is a no-op (a rerun finishing a run); different properties are refused.
   * Keys added since (`POST .../keys`, re-wraps at accept) do not make the first listing's keys differ.
   */
  async function sameListing(existing: Listing, terms: TaskTerms): Promise<ListingResult> {
    if (existing.privacy !== terms.privacy) throw new MarketError("PRIVACY_IMMUTABLE");
    const keys = await db.selectFrom("task_keys").select(["agent_address", "wrapped_key"]).where("task_hash", "=", existing.task_hash).execute();
    const { privacy: _listedPrivacy, ...listedProperties } = listedFields(existing);
    const listed: Omit<ListedFields, "privacy"> & { wrappedKeys: Record<string, string> } = {
      ...listedProperties,
      // Keys added since (`POST .../keys`, re-wraps at accept) are not the first listing's.
      wrappedKeys: Object.fromEntries(keys.filter((k) => k.agent_address in terms.wrappedKeys).map((k) => [k.agent_address, k.wrapped_key])),
    };
    const changed = (Object.keys(listed) as Array<keyof typeof listed>).filter((key) => canonical(listed[key]) !== canonical(terms[key]));
    if (changed.length > 0) {
      throw new MarketError("LISTING_IMMUTABLE", `Listed before with other ${changed.join(", ")}.`, {
        details: changed.map((field) => ({ field: `body.${field}`, message: "differs from the first listing" })),
      });
    }
    return { taskHash: asTaskHash(existing.task_hash), status: "already_listed" };
  }

  return {
    async listOne(chain: Chain, wallet: string, body: TaskFieldsInput & { txHash: string }): Promise<ListingResult> {
      const funded = await receiptOf(chain, body.txHash, wallet);
      return listFunded(chain, wallet, body.txHash, body, funded.get(body.taskHash.toLowerCase()));
    },

    /** Lists the tasks of one batch receipt; each item succeeds or fails on its own (outcomes per item). */
    async listBatch(chain: Chain, wallet: string, txHash: string, items: TaskFieldsInput[]) {
      const funded = await receiptOf(chain, txHash, wallet);
      await markUntouched(chain, txHash, funded);
      const batchDeps = batchTermsDeps(deps);
      const seen = new Set<string>();
      type Outcome = ErrorDetail & { taskHash: string; status: string };
      // The items are listed at once (each reads the chain and the blob store, then writes its own rows); a repeated
      // task hash fails alone, and an unreachable chain fails the request.
      const results = await Promise.all(
        items.map(async (item): Promise<Outcome> => {
          const taskHash = item.taskHash.toLowerCase();
          const repeated = seen.has(taskHash);
          seen.add(taskHash);
          try {
            if (repeated) throw new MarketError("DUPLICATE_TASK_HASH");
            const result = await listFunded(chain, wallet, txHash, item, funded.get(taskHash), batchDeps);
            return { ...result, message: result.status === "listed" ? "listed" : "listed before with the same properties" };
          } catch (error) {
            if (!(error instanceof MarketError)) {
              return { taskHash, status: "failed", code: answeredCode("LISTING_FAILED"), message: (error as Error).message };
            }
            if (error.code === "CHAIN_UNAVAILABLE") throw error;
            return { taskHash, status: "failed", code: error.code, message: error.message };
          }
        }),
      );
      return results;
    },
  };
}

/** JSON with sorted keys, so equal values compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

import { getAddress, ZeroAddress, type Log, type TransactionReceipt } from "ethers";
import { chainCall, type Chain } from "../chains";
import { isUniqueViolation, type Db } from "../db";
import type { Listing, ListingsTable, ListingWithAmount } from "../db/schema";
import type { Insertable } from "kysely";
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

/** A first listing checked and ready to write: its row, its terms, and what its funding escrowed. */
interface Ready {
  taskHash: string;
  terms: TaskTerms;
  amount: bigint;
  deadline: number;
  row: Insertable<ListingsTable>;
}

/** Rows per multi-row statement of a batch's listings (well under either database's parameter limit). */
const WRITE_ROWS = 200;

const isReady = (c: object): c is Ready => "row" in c && "terms" in c;

function slices<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

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

  /**
   * Every check of a listing, writing nothing: the answer when the task was listed before (`already_listed`, or the
   * refusal of other properties), else the listing ready to write. `listed` answers the task's listing when the caller
   * read its batch's listings at once (absent: not listed then); without it the listing is read here.
   */
  async function checkListing(
    chain: Chain,
    wallet: string,
    txHash: string,
    input: TaskFieldsInput,
    funded: Funded | undefined,
    checkDeps: TermsDeps = deps,
    listed?: Map<string, Listing>,
  ): Promise<{ done: ListingResult } | { ready: Ready }> {
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

    const existing = listed ? listed.get(taskHash) : await db.selectFrom("listings").selectAll().where("task_hash", "=", taskHash).executeTakeFirst();
    if (existing) return { done: await sameListing(existing, terms) };
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
    const row = listingRow(terms, { taskHash, chain: chain.name, poster: wallet, token: funded.token, fundingTx: txHash, listedAt: now() });
    return { ready: { taskHash, terms, amount: funded.amount, deadline, row } };
  }

  /**
   * Writes checked first listings of one chain in one transaction: all of them, or none (a unique violation when
   * another request listed one of them meanwhile, or any failure). Then runs `onListed` for each.
   */
  async function writeListings(chain: Chain, ready: readonly Ready[]): Promise<void> {
    await db.transaction().execute(async (trx) => {
      // The log first: whichever of this listing and the indexing of its funding commits second sees the other.
      await holdLog(trx, chain.name);
      for (const part of slices(ready, WRITE_ROWS))
        await trx
          .insertInto("listings")
          .values(part.map((r) => r.row))
          .execute();
      const tags = ready.flatMap((r) => r.terms.requiredCapabilities.map((tag) => ({ task_hash: r.taskHash, tag })));
      for (const part of slices(tags, WRITE_ROWS)) await trx.insertInto("listing_capabilities").values(part).execute();
      const keys = ready.flatMap((r) =>
        Object.entries(r.terms.wrappedKeys).map(([agent_address, wrapped_key]) => ({ task_hash: r.taskHash, agent_address, wrapped_key })),
      );
      for (const part of slices(keys, WRITE_ROWS)) await trx.insertInto("task_keys").values(part).execute();
      // Listed for workers once the task is also indexed (a browse shows it then); else its indexing says so.
      const indexed = new Set<string>();
      for (const part of slices(ready, WRITE_ROWS)) {
        const rows = await trx
          .selectFrom("escrow_tasks")
          .select("task_hash")
          .where("chain", "=", chain.name)
          .where(
            "task_hash",
            "in",
            part.map((r) => r.taskHash),
          )
          .execute();
        for (const { task_hash } of rows) indexed.add(task_hash);
      }
      const drafts = ready
        .filter((r) => indexed.has(r.taskHash))
        .map((r) => listedDraft({ ...r.row, amount: r.amount.toString() }, Object.keys(r.terms.wrappedKeys), r.deadline));
      if (drafts.length > 0) await appendEvents(trx, chain.name, drafts, now());
    });
    if (!onListed) return;
    const rows = new Map<string, Listing>();
    for (const part of slices(ready, WRITE_ROWS)) {
      const listed = await db
        .selectFrom("listings")
        .selectAll()
        .where(
          "task_hash",
          "in",
          part.map((r) => r.taskHash),
        )
        .execute();
      for (const listing of listed) rows.set(listing.task_hash, listing);
    }
    for (const r of ready) {
      const listing = rows.get(r.taskHash);
      if (listing) await onListed({ ...listing, amount: r.amount.toString() }, r.deadline).catch(() => undefined);
    }
  }

  /** Writes one checked first listing; listed concurrently by another request, the first listing decides. */
  async function writeListing(chain: Chain, ready: Ready): Promise<ListingResult> {
    try {
      await writeListings(chain, [ready]);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const winner = await db.selectFrom("listings").selectAll().where("task_hash", "=", ready.taskHash).executeTakeFirstOrThrow();
      return sameListing(winner, ready.terms);
    }
    return { taskHash: asTaskHash(ready.taskHash), status: "listed" };
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
      const checked = await checkListing(chain, wallet, body.txHash, body, funded.get(body.taskHash.toLowerCase()));
      return "done" in checked ? checked.done : writeListing(chain, checked.ready);
    },

    /**
     * Lists the tasks of one batch receipt; each item succeeds or fails on its own (outcomes per item). The items are
     * checked at once (each reads the chain and the blob store), their listings read in one query, and the first
     * listings written in one transaction; when that fails (another request listed one of them meanwhile, or any
     * error), each is written on its own as a single listing is, so every item still has its own outcome.
     */
    async listBatch(chain: Chain, wallet: string, txHash: string, items: TaskFieldsInput[]) {
      const funded = await receiptOf(chain, txHash, wallet);
      await markUntouched(chain, txHash, funded);
      const batchDeps = batchTermsDeps(deps);
      const listed = new Map<string, Listing>();
      for (const part of slices(
        items.map((item) => item.taskHash.toLowerCase()),
        WRITE_ROWS,
      )) {
        for (const listing of await db.selectFrom("listings").selectAll().where("task_hash", "in", part).execute())
          listed.set(listing.task_hash, listing);
      }
      const seen = new Set<string>();
      type Outcome = ErrorDetail & { taskHash: string; status: string };
      const failed = (taskHash: string, error: unknown): Outcome => {
        if (!(error instanceof MarketError)) {
          return { taskHash, status: "failed", code: answeredCode("LISTING_FAILED"), message: (error as Error).message };
        }
        if (error.code === "CHAIN_UNAVAILABLE") throw error;
        return { taskHash, status: "failed", code: error.code, message: error.message };
      };
      const answered = (result: ListingResult): Outcome => ({
        ...result,
        message: result.status === "listed" ? "listed" : "listed before with the same properties",
      });
      // A repeated task hash fails alone, and an unreachable chain fails the request.
      const checked = await Promise.all(
        items.map(async (item): Promise<Outcome | Ready> => {
          const taskHash = item.taskHash.toLowerCase();
          const repeated = seen.has(taskHash);
          seen.add(taskHash);
          try {
            if (repeated) throw new MarketError("DUPLICATE_TASK_HASH");
            const check = await checkListing(chain, wallet, txHash, item, funded.get(taskHash), batchDeps, listed);
            return "done" in check ? answered(check.done) : check.ready;
          } catch (error) {
            return failed(taskHash, error);
          }
        }),
      );
      const ready = checked.filter(isReady);
      const written = new Map<Ready, Outcome>();
      if (ready.length > 0) {
        try {
          await writeListings(chain, ready);
          for (const r of ready) written.set(r, answered({ taskHash: asTaskHash(r.taskHash), status: "listed" }));
        } catch {
          for (const r of ready) {
            try {
              written.set(r, answered(await writeListing(chain, r)));
            } catch (error) {
              written.set(r, failed(r.taskHash, error));
            }
          }
        }
      }
      return checked.map((c) => (isReady(c) ? written.get(c)! : c));
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

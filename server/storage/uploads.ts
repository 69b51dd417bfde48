/**
 * Uploads with an owner (docs/security.md, uploads without quota): every upload records the account that made it; an
 * account may hold at most `quotaBytes` of blobs no listed task references, and upload at most `bytesPerMinute`; blobs
 * nobody references (no listing names them as its root hash, no escrow task has their hash) are removed once
 * `graceMs` has passed since their latest upload.
 */
import { sql } from "kysely";
import type { Db } from "../db";
import type { Clock } from "../http/types";
import { createWindows, rateLimited } from "../http/rate-limit";
import type { BlobStore } from "./blob-store";
import { MarketError } from "@market/core/errors";
import { contentHash } from "@market/core/crypto";
import { DEFAULT_ABUSE, type UploadLimits } from "../config";

/** Blobs removed per statement batch of a sweep. */
const SWEEP_BATCH = 200;

export type Uploads = ReturnType<typeof createUploads>;

export function createUploads({
  db,
  blobs,
  now,
  limits = DEFAULT_ABUSE.uploads,
  onSweepError,
}: {
  db: Db;
  blobs: BlobStore;
  now: Clock;
  limits?: UploadLimits;
  onSweepError?: (error: unknown) => void;
}) {
  const rate = createWindows(60_000);
  /** One upload or removal at a time per blob, and one quota check and record at a time per account (per instance). */
  const turns = new Map<string, Promise<unknown>>();
  async function inTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
    const mine = (turns.get(key) ?? Promise.resolve()).catch(() => undefined).then(work);
    turns.set(key, mine);
    try {
      return await mine;
    } finally {
      if (turns.get(key) === mine) turns.delete(key);
    }
  }

  /** Bytes of the account's blobs that no listing references. */
  async function unreferencedBytes(accountId: number): Promise<number> {
    const row = await db
      .selectFrom("blob_uploads as u")
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("u.size"), sql<number>`0`).as("bytes"))
      .where("u.account_id", "=", accountId)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom("listings as l").select("l.task_hash").whereRef("l.root_hash", "=", "u.root_hash"))),
      )
      .executeTakeFirst();
    return Number(row?.bytes ?? 0);
  }

  /**
   * What these uploads add to the account's unreferenced bytes: nothing for a blob it already holds or a listing uses,
   * and a blob named twice counts once.
   */
  async function addedBytes(accountId: number, blobs: ReadonlyMap<string, number>): Promise<number> {
    const hashes = [...blobs.keys()];
    const held = await db
      .selectFrom("blob_uploads")
      .select("root_hash")
      .where("root_hash", "in", hashes)
      .where("account_id", "=", accountId)
      .execute();
    const listed = await db.selectFrom("listings").select("root_hash").where("root_hash", "in", hashes).execute();
    const known = new Set([...held.map((r) => r.root_hash), ...listed.map((r) => r.root_hash)]);
    let added = 0;
    for (const [rootHash, size] of blobs) if (!known.has(rootHash)) added += size;
    return added;
  }

  /** Runs `work` holding the turn of every key, taken one after another in sorted order (no two callers wait on each other). */
  function inTurns<T>(keys: readonly string[], work: () => Promise<T>): Promise<T> {
    const [first, ...rest] = keys;
    return first === undefined ? work() : inTurn(first, () => inTurns(rest, work));
  }

  /**
   * Stores the bytes for the account: 429 `RATE_LIMITED` past its bytes per minute, 413 `UPLOAD_QUOTA_EXCEEDED` past
   * its quota of unreferenced bytes (nothing stored or counted either way), 503 `STORAGE_FAILED` when the store fails.
   */
  async function store(accountId: number, bytes: Uint8Array): Promise<{ rootHash: string; size: number }> {
    return (await storeMany(accountId, [bytes]))[0]!;
  }

  /**
   * Stores several blobs for the account at once, answered in order, as `store` stores one: the quota and the rate
   * apply to them together, and a refusal stores and counts none of them; their uploads are recorded in one transaction.
   */
  async function storeMany(accountId: number, items: readonly Uint8Array[]): Promise<Array<{ rootHash: string; size: number }>> {
    const hashes = items.map((bytes) => contentHash(bytes));
    const sizes = new Map(hashes.map((rootHash, i) => [rootHash, items[i]!.length]));
    const total = items.reduce((sum, bytes) => sum + bytes.length, 0);
    return inTurn(`account:${accountId}`, async () => {
      const added = await addedBytes(accountId, sizes);
      if (added > 0) {
        const held = await unreferencedBytes(accountId);
        if (held + added > limits.quotaBytes) {
          const what = items.length === 1 ? `this upload of ${total} bytes` : `these ${items.length} uploads of ${total} bytes`;
          throw new MarketError(
            "UPLOAD_QUOTA_EXCEEDED",
            `The account holds ${held} bytes of blobs no listed task references; ${what} would pass the quota of ${limits.quotaBytes}.`,
            {
              details: [
                {
                  message: "list the tasks that use them, or wait for unreferenced blobs to be collected",
                  held,
                  upload: total,
                  quota: limits.quotaBytes,
                },
              ],
            },
          );
        }
      }
      const wait = rate.take(`account:${accountId}`, limits.bytesPerMinute, now(), total);
      if (wait !== undefined) throw rateLimited(wait, "upload bytes from this account");
      // Each blob's turn is held until its upload is recorded: a sweep never removes a blob between the two.
      const distinct = [...sizes.keys()].sort();
      return inTurns(
        distinct.map((rootHash) => `blob:${rootHash}`),
        async () => {
          const stored = new Map<string, { rootHash: string; size: number }>();
          for (const [i, rootHash] of hashes.entries()) {
            if (stored.has(rootHash)) continue;
            try {
              stored.set(rootHash, await blobs.put(items[i]!));
            } catch (cause) {
              throw new MarketError("STORAGE_FAILED", undefined, { cause });
            }
          }
          const at = now();
          const rows = [...stored.values()];
          await db.transaction().execute(async (trx) => {
            await trx
              .insertInto("blobs")
              .values(rows.map((b) => ({ root_hash: b.rootHash, size: b.size, created_at: at })))
              .onConflict((oc) => oc.column("root_hash").doNothing())
              .execute();
            await trx
              .insertInto("blob_uploads")
              .values(rows.map((b) => ({ root_hash: b.rootHash, account_id: accountId, size: b.size, uploaded_at: at })))
              .onConflict((oc) => oc.columns(["root_hash", "account_id"]).doUpdateSet({ uploaded_at: at }))
              .execute();
          });
          return hashes.map((rootHash) => stored.get(rootHash)!);
        },
      );
    });
  }

  /**
   * Removes blobs no listing and no escrow task references whose latest upload (or, for a blob stored before uploads
   * were recorded, its first) is older than the grace period: their rows, then their bytes. Answers how many.
   */
  async function sweep(): Promise<number> {
    const cutoff = now() - limits.graceMs;
    let removed = 0;
    for (;;) {
      const candidates = await db
        .selectFrom("blobs as b")
        .select("b.root_hash")
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom("listings as l").select("l.task_hash").whereRef("l.root_hash", "=", "b.root_hash"))),
        )
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom("escrow_tasks as t").select("t.task_hash").whereRef("t.task_hash", "=", "b.root_hash"))),
        )
        .where("b.created_at", "<", cutoff)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("blob_uploads as u").select("u.root_hash").whereRef("u.root_hash", "=", "b.root_hash").where("u.uploaded_at", ">=", cutoff),
            ),
          ),
        )
        .orderBy("b.created_at")
        .limit(SWEEP_BATCH)
        .execute();
      let batch = 0;
      for (const { root_hash: rootHash } of candidates) {
        batch += await inTurn(`blob:${rootHash}`, () => removeIfUnused(rootHash, cutoff));
      }
      removed += batch;
      if (candidates.length < SWEEP_BATCH || batch === 0) return removed;
    }
  }

  /** 1 when the blob was still unused and is removed now, else 0 (a listing or an upload came in since). */
  async function removeIfUnused(rootHash: string, cutoff: number): Promise<number> {
    const gone = await db.transaction().execute(async (trx) => {
      const used =
        (await trx.selectFrom("listings").select("task_hash").where("root_hash", "=", rootHash).executeTakeFirst()) ??
        (await trx.selectFrom("escrow_tasks").select("task_hash").where("task_hash", "=", rootHash).executeTakeFirst()) ??
        (await trx
          .selectFrom("blob_uploads")
          .select("root_hash")
          .where("root_hash", "=", rootHash)
          .where("uploaded_at", ">=", cutoff)
          .executeTakeFirst());
      if (used) return false;
      await trx.deleteFrom("blob_uploads").where("root_hash", "=", rootHash).execute();
      await trx.deleteFrom("blobs").where("root_hash", "=", rootHash).execute();
      return true;
    });
    if (!gone) return 0;
    await blobs.delete(rootHash);
    return 1;
  }

  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> | undefined;
  return {
    store,
    storeMany,
    sweep,
    unreferencedBytes,
    /** Collects unreferenced blobs every `gcIntervalMs` (nothing when 0). */
    start() {
      if (limits.gcIntervalMs <= 0 || timer) return;
      timer = setInterval(() => {
        if (sweeping) return;
        sweeping = sweep()
          .catch((error: unknown) => onSweepError?.(error))
          .finally(() => {
            sweeping = undefined;
          });
      }, limits.gcIntervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await sweeping;
    },
  };
}

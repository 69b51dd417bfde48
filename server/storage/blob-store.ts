import { randomUUID } from "node:crypto";
import { mkdirSync, statSync } from "node:fs";
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { contentHash } from "@market/core/crypto";
import type { Db } from "../db";

/** Content-addressed blobs on disk: the name of a blob is the SHA-256 of its bytes (its rootHash). */
export interface BlobStore {
  put(bytes: Uint8Array): Promise<{ rootHash: string; size: number }>;
  get(rootHash: string): Promise<Uint8Array | undefined>;
  has(rootHash: string): Promise<boolean>;
  /** Removes a blob (garbage collection of unreferenced uploads); nothing when it is not there. */
  delete(rootHash: string): Promise<void>;
}

export function createBlobStore(dir: string): BlobStore {
  mkdirSync(dir, { recursive: true });
  const fileOf = (rootHash: string) => {
    const hex = rootHash.toLowerCase().replace(/^0x/, "");
    if (!/^[0-9a-f]{64}$/.test(hex)) return undefined;
    return path.join(dir, hex.slice(0, 2), hex);
  };
  /** The 256 subfolders made so far (each made once, not at every put). */
  const folders = new Set<string>();
  return {
    async put(bytes) {
      const rootHash = contentHash(bytes);
      const file = fileOf(rootHash)!;
      if (!exists(file)) {
        const folder = path.dirname(file);
        if (!folders.has(folder)) {
          mkdirSync(folder, { recursive: true });
          folders.add(folder);
        }
        // Write then rename: a crash never leaves a partial blob under its final name. Each write has a temporary
        // file of its own, so uploads of the same bytes at once each rename a whole copy (the content is the same).
        const tmp = `${file}.${randomUUID()}.tmp`;
        await writeFile(tmp, bytes).catch(async (error: NodeJS.ErrnoException) => {
          // The folder was removed since it was made here: made again.
          if (error.code !== "ENOENT") throw error;
          mkdirSync(folder, { recursive: true });
          await writeFile(tmp, bytes);
        });
        await rename(tmp, file);
      }
      return { rootHash, size: bytes.length };
    },
    async get(rootHash) {
      const file = fileOf(rootHash);
      if (!file) return undefined;
      try {
        return new Uint8Array(await readFile(file));
      } catch {
        return undefined;
      }
    },
    async has(rootHash) {
      const file = fileOf(rootHash);
      return file ? exists(file) : false;
    },
    async delete(rootHash) {
      const file = fileOf(rootHash);
      if (file) await rm(file, { force: true });
    },
  };
}

/**
 * Whether the file is there: one stat, made synchronously (a few microseconds for a file the system has seen; made
 * through the thread pool it cost about as much again as the whole check of a task's blob, once per private task at
 * funding and again at listing).
 */
function exists(file: string): boolean {
  try {
    return statSync(file, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

/**
 * Content-addressed blobs in the database (`blob_contents`), for several API processes that share no disk: every one
 * reads what any one stored. The name is the SHA-256 of the bytes, so a second put of the same bytes changes nothing.
 */
export function createDatabaseBlobStore(db: Db): BlobStore {
  const key = (rootHash: string) => {
    const hex = rootHash.toLowerCase().replace(/^0x/, "");
    return /^[0-9a-f]{64}$/.test(hex) ? `0x${hex}` : undefined;
  };
  return {
    async put(bytes) {
      const rootHash = contentHash(bytes);
      await db
        .insertInto("blob_contents")
        .values({ root_hash: rootHash, data: Buffer.from(bytes) })
        .onConflict((oc) => oc.column("root_hash").doNothing())
        .execute();
      return { rootHash, size: bytes.length };
    },
    async get(rootHash) {
      const name = key(rootHash);
      if (!name) return undefined;
      const row = await db.selectFrom("blob_contents").select("data").where("root_hash", "=", name).executeTakeFirst();
      return row ? new Uint8Array(row.data) : undefined;
    },
    async has(rootHash) {
      const name = key(rootHash);
      if (!name) return false;
      return (await db.selectFrom("blob_contents").select("root_hash").where("root_hash", "=", name).executeTakeFirst()) !== undefined;
    },
    async delete(rootHash) {
      const name = key(rootHash);
      if (name) await db.deleteFrom("blob_contents").where("root_hash", "=", name).execute();
    },
  };
}

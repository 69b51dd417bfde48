import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { readFile, rename, rm, writeFile, stat } from "node:fs/promises";
import path from "node:path";
import { contentHash } from "../../core/crypto";

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
  return {
    async put(bytes) {
      const rootHash = contentHash(bytes);
      const file = fileOf(rootHash)!;
      if (!(await exists(file))) {
        mkdirSync(path.dirname(file), { recursive: true });
        // Write then rename: a crash never leaves a partial blob under its final name. Each write has a temporary
        // file of its own, so uploads of the same bytes at once each rename a whole copy (the content is the same).
        const tmp = `${file}.${randomUUID()}.tmp`;
        await writeFile(tmp, bytes);
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

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

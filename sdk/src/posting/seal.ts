/**
 * Sealing a private brief: its AES-256-GCM encryption and its key wrapped to each reader (core/crypto), once the
 * CPU-heavy part of posting (about 5 ms for a brief wrapped to 20 agents with a curve multiplication per agent, half of
 * a 1,000-row run's client CPU; well under a millisecond with a wrapper's shared ephemeral key). The engine asks
 * a `BriefSealer` (a port). Where the engine runs in Node the default seals on worker threads, one per core
 * (seal-threads.ts), so the thread that signs, funds and lists is never blocked by it; elsewhere (the web app's bulk
 * page) it seals in the calling thread, with that environment's crypto (web/src/node/crypto.ts). Each thread wraps
 * its briefs' keys with a `createBriefKeyWrapper` of its own: one ephemeral key for many briefs, so a recipient costs
 * one curve multiplication per thread and run instead of one per brief.
 */
import { createBriefKeyWrapper, encryptBrief } from "@market/core/crypto";

/** A sealed brief: what is uploaded (`ciphertext`), its fresh key, and that key wrapped to each reader, in order. */
export interface SealedBrief {
  ciphertext: Uint8Array;
  key: Uint8Array;
  wrappedKeys: string[];
}

export interface BriefSealer {
  /**
   * Encrypts `instructions` under a fresh key and wraps the key to each public key of `readers` (core/crypto
   * `encryptBrief` then a `BriefKeyWrapper`); rejects as they throw (a `CryptoError` for a malformed public key).
   */
  seal(instructions: string, readers: readonly string[]): Promise<SealedBrief>;
  /** Makes ready to seal soon (the engine calls it when a run starts: threads start while its rows are checked). */
  warm?(): void;
}

/** Seals in the calling thread. */
export const inlineSealer: BriefSealer = {
  seal: async (instructions, readers) => sealHere(instructions, readers),
};

/** This thread's wrapper: the briefs sealed here share its ephemeral key, replaced as core/crypto bounds it. */
const wrapper = createBriefKeyWrapper();

export function sealHere(instructions: string, readers: readonly string[]): SealedBrief {
  const { ciphertext, key } = encryptBrief(instructions);
  return { ciphertext, key, wrappedKeys: wrapper.wrap(key, readers) };
}

import { publicKeyFromPrivateKey, unwrapBriefKey, wrapBriefKey } from "@market/core/crypto";

export type Custody = ReturnType<typeof createCustody>;

/**
 * The service's custody key: a poster may add `keyCustodyBlob`, the brief key wrapped (ECIES) to the custody public
 * key, so any eligible agent can be given the key at accept. Without the key, or when it was rotated since the post,
 * re-wrapping is impossible and such agents get `NEEDS_WRAP`.
 */
export function createCustody(privateKey: string | undefined) {
  const publicKey = privateKey ? publicKeyFromPrivateKey(privateKey) : null;
  return {
    /** Uncompressed public key (130 hex, no 0x) posters wrap custody copies to; null when not configured. */
    publicKey,
    available: privateKey !== undefined,
    /** Whether this service can open the copy (it holds the custody key the copy was wrapped to). */
    opens(keyCustodyBlob: string): boolean {
      if (!privateKey) return false;
      try {
        unwrapBriefKey(keyCustodyBlob, privateKey);
        return true;
      } catch {
        return false;
      }
    },
    /** The brief key re-wrapped to the agent; undefined when the copy cannot be opened. */
    rewrap(keyCustodyBlob: string, agentPublicKey: string): string | undefined {
      if (!privateKey) return undefined;
      try {
        return wrapBriefKey(unwrapBriefKey(keyCustodyBlob, privateKey), agentPublicKey);
      } catch {
        return undefined;
      }
    },
  };
}

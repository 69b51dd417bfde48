/**
 * Key wraps per second, side by side in one process: the product's wrap (core/crypto's `createBriefKeyWrapper`, as
 * posting seals: one ephemeral key for many briefs, a recipient's wrap key derived once), core/crypto's
 * `wrapBriefKeys` (@noble/curves with precomputed recipient points, one ephemeral key per brief), the same one wrap
 * per call, a wrap whose curve work is node:crypto's native secp256k1 ECDH (OpenSSL), and eciesjs. Every method's wraps are checked to open with eciesjs first, so each
 * rate is for the same eciesjs-compatible bytes.
 */
import { createCipheriv, createECDH, ECDH, hkdfSync, randomBytes } from "node:crypto";
import { Wallet } from "ethers";
import { createBriefKeyWrapper, encryptBrief, publicKeyFromPrivateKey, wrapBriefKey, wrapBriefKeys } from "@market/core/crypto";

const P = 2n ** 256n - 2n ** 32n - 977n; // secp256k1 field prime
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n; // group order

const big = (bytes: Uint8Array) => BigInt(`0x${Buffer.from(bytes).toString("hex")}`);
const bytes32 = (value: bigint) => Buffer.from(value.toString(16).padStart(64, "0"), "hex");
const mod = (value: bigint) => ((value % P) + P) % P;

/**
 * k·R as an uncompressed point with node:crypto alone. OpenSSL's ECDH answers only x(k·R), and the eciesjs format
 * hashes the whole point, so y is recovered: decompress x to (x, ±y), then compute x((k+1)·R) = x(k·R + R) natively
 * and keep the sign whose sum with R has that x (the two candidates' sums differ, as the group has prime order).
 */
function nativeSharedPoint(secret: bigint, recipient: Buffer): Buffer {
  const ecdh = createECDH("secp256k1");
  ecdh.setPrivateKey(bytes32(secret));
  const x = ecdh.computeSecret(recipient);
  ecdh.setPrivateKey(bytes32((secret + 1n) % N));
  const xNext = big(ecdh.computeSecret(recipient));
  const even = ECDH.convertKey(Buffer.concat([Buffer.from([2]), x]), "secp256k1", undefined, undefined, "uncompressed") as Buffer;
  const [xs, ys, xr, yr] = [big(x), big(even.subarray(33)), big(recipient.subarray(1, 33)), big(recipient.subarray(33))];
  // x3 of S + R with S = (xs, ys): (x3 + xs + xr)·(xr − xs)² = (yr − ys)², no inversion needed.
  const dx = mod(xr - xs);
  const dy = mod(yr - ys);
  if (mod(mod(xNext + xs + xr) * mod(dx * dx)) === mod(dy * dy)) return even;
  return Buffer.concat([Buffer.from([4]), x, bytes32(P - ys)]);
}

/** One eciesjs-format wrap whose curve work is node:crypto's: ephemeral key, shared point, then HKDF and AES-GCM. */
export function nativeWrap(key: Uint8Array, recipientPublicKey: string): string {
  const recipient = Buffer.from(recipientPublicKey, "hex");
  const ephemeralKey = createECDH("secp256k1");
  const ephemeral = ephemeralKey.generateKeys();
  const shared = nativeSharedPoint(big(ephemeralKey.getPrivateKey()), recipient);
  const aesKey = Buffer.from(hkdfSync("sha256", Buffer.concat([ephemeral, shared]), Buffer.alloc(0), Buffer.alloc(0), 32));
  const nonce = randomBytes(16);
  const cipher = createCipheriv("aes-256-gcm", aesKey, nonce);
  const body = Buffer.concat([cipher.update(key), cipher.final()]);
  return Buffer.concat([ephemeral, nonce, cipher.getAuthTag(), body]).toString("hex");
}

type Method = (key: Uint8Array, recipients: string[]) => string[];

/** Wraps per second of each method: `briefs` brief keys each wrapped to `agents` agents (fewer for the slow ones). */
export async function wrapRates(agents: number, briefs: number): Promise<Record<string, number>> {
  const ecies = await import("eciesjs");
  const wallets = Array.from({ length: agents }, () => Wallet.createRandom());
  const publicKeys = wallets.map((w) => publicKeyFromPrivateKey(w.privateKey));
  const wrapper = createBriefKeyWrapper();
  const methods: Record<string, [Method, number]> = {
    product: [(key, recipients) => wrapper.wrap(key, recipients), briefs],
    productOneEphemeralPerBrief: [(key, recipients) => wrapBriefKeys(key, recipients), briefs],
    productOneEphemeralPerWrap: [(key, recipients) => recipients.map((r) => wrapBriefKey(key, r)), briefs],
    nodeCryptoNative: [(key, recipients) => recipients.map((r) => nativeWrap(key, r)), Math.ceil(briefs / 5)],
    eciesjs: [
      (key, recipients) => recipients.map((r) => Buffer.from(ecies.encrypt(Buffer.from(r, "hex"), key)).toString("hex")),
      Math.ceil(briefs / 10),
    ],
  };
  // The product precomputes a recipient's multiples after a few wraps to it (as a bulk run's first rows do).
  for (let i = 0; i < 5; i++) wrapBriefKeys(encryptBrief("warm up").key, publicKeys);
  const rates: Record<string, number> = {};
  for (const [name, [wrap, count]] of Object.entries(methods)) {
    const check = encryptBrief("check").key;
    for (const [i, wrapped] of wrap(check, publicKeys).entries()) {
      const opened = ecies.decrypt(Buffer.from(wallets[i]!.privateKey.slice(2), "hex"), Buffer.from(wrapped, "hex"));
      if (!Buffer.from(opened).equals(Buffer.from(check))) throw new Error(`eciesjs does not open a ${name} wrap`);
    }
    const keys = Array.from({ length: count }, () => encryptBrief("brief").key);
    const started = performance.now();
    for (const key of keys) wrap(key, publicKeys);
    rates[name] = Math.round((count * agents) / ((performance.now() - started) / 1000));
  }
  return rates;
}

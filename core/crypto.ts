/**
 * The one crypto module of the product: brief encryption, key wrapping to agents, and the hashes that name tasks,
 * results and blobs. Server, SDK, runtime and CLI all call these, so a brief sealed by one opens in every other.
 *
 * Encrypted brief (what is uploaded and hashed into the private task hash), AES-256-GCM with a fresh key per brief:
 *
 *     iv (12 bytes, random) || ciphertext (same length as the UTF-8 plaintext) || tag (16 bytes)
 *
 * no associated data. This is WebCrypto's `AES-GCM` output with the IV in front, so a browser opens it with
 * `crypto.subtle.decrypt({ name: "AES-GCM", iv: blob.slice(0, 12) }, key, blob.slice(12))`.
 *
 * Wrapped key (`wrappedKeys` values, hex without 0x), ECIES over secp256k1 in the format of eciesjs's defaults (so
 * either opens the other's), 129 bytes for a 32-byte AES key:
 *
 *     ephemeral public key (65 bytes, uncompressed secp256k1) || nonce (16) || tag (16) || encrypted AES key (32)
 *
 * with the AES-256-GCM key = HKDF-SHA256(ikm = ephemeral public key || uncompressed shared point, no salt, no info).
 * The curve arithmetic is @noble/curves; hashing and AES are node:crypto. A bulk run wraps each brief to the same
 * agents again and again, so a recipient's point gets precomputed multiples after a few wraps (about 10x faster).
 * node:crypto's own secp256k1 ECDH is not used: OpenSSL computes this curve with its generic code (no precomputed
 * tables), and its ECDH answers only the shared point's x while this format hashes the whole point, so a native wrap
 * takes a second multiplication to find y; `npm run bench:bulk` measures it side by side (`wrapsPerSecond`): about
 * 6x slower than the wraps here, which are themselves about 30x faster than eciesjs's.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import { secp256k1 } from "@noble/curves/secp256k1";
import { computeAddress, SigningKey } from "ethers";

export const BRIEF_KEY_BYTES = 32;
export const BRIEF_IV_BYTES = 12;
export const BRIEF_TAG_BYTES = 16;
export const WRAPPED_KEY_BYTES = 65 + 16 + 16 + BRIEF_KEY_BYTES;

export type CryptoErrorCode = "INVALID_PUBLIC_KEY" | "INVALID_PRIVATE_KEY" | "INVALID_KEY_LENGTH" | "BRIEF_DECRYPT_FAILED" | "KEY_UNWRAP_FAILED";

/** Thrown for a malformed key or a ciphertext that does not open (wrong key or altered bytes). */
export class CryptoError extends Error {
  override readonly name = "CryptoError";
  constructor(
    readonly code: CryptoErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface EncryptedBrief {
  /** `iv || ciphertext || tag`, see the layout above. */
  ciphertext: Uint8Array;
  /** The fresh 32-byte AES key; wrap it to each agent allowed to open the brief. */
  key: Uint8Array;
}

export function encryptBrief(plaintext: string): EncryptedBrief {
  const key = new Uint8Array(randomBytes(BRIEF_KEY_BYTES));
  const iv = randomBytes(BRIEF_IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return { ciphertext: new Uint8Array(Buffer.concat([iv, body, cipher.getAuthTag()])), key };
}

export function decryptBrief(ciphertext: Uint8Array, key: Uint8Array): string {
  checkBriefKey(key);
  if (ciphertext.length < BRIEF_IV_BYTES + BRIEF_TAG_BYTES) {
    throw new CryptoError("BRIEF_DECRYPT_FAILED", "encrypted brief is shorter than its IV and tag");
  }
  const iv = ciphertext.subarray(0, BRIEF_IV_BYTES);
  const body = ciphertext.subarray(BRIEF_IV_BYTES, ciphertext.length - BRIEF_TAG_BYTES);
  const tag = ciphertext.subarray(ciphertext.length - BRIEF_TAG_BYTES);
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, iv);
    decipher.setAuthTag(tag);
    const plain = Buffer.concat([decipher.update(body), decipher.final()]);
    return new TextDecoder("utf-8", { fatal: true }).decode(plain);
  } catch (cause) {
    throw new CryptoError("BRIEF_DECRYPT_FAILED", "brief does not open: wrong key or altered ciphertext", { cause });
  }
}

/** ECIES-wraps a brief key to an agent's public key; the result is hex without 0x (a `wrappedKeys` value). */
export function wrapBriefKey(key: Uint8Array, recipientPublicKey: string): string {
  return wrapBriefKeys(key, [recipientPublicKey])[0]!;
}

/**
 * Wraps one brief key to several agents (hex without 0x, in the order of `recipientPublicKeys`), each wrap in the
 * format above. The wraps of one call share one fresh ephemeral key, so a brief wrapped to 20 agents costs one
 * base-point multiplication instead of 20 (about half the work of wrapping): reusing the ephemeral key across the
 * recipients of one message keeps DHIES-style encryption secure (Bellare, Boldyreva, Staddon, "Randomness re-use in
 * multi-recipient encryption schemes", PKC 2003), as each recipient's shared point, AES key and nonce still differ.
 * Recipients see only that the wraps of one brief came from one call, which the brief's `wrappedKeys` says anyway.
 */
export function wrapBriefKeys(key: Uint8Array, recipientPublicKeys: readonly string[]): string[] {
  checkBriefKey(key);
  return sealToMany(key, recipientPublicKeys);
}

/** Opens a wrapped brief key with the agent's private key (hex, with or without 0x). */
export function unwrapBriefKey(wrappedKeyHex: string, privateKeyHex: string): Uint8Array {
  const hex = strip0x(wrappedKeyHex);
  if (!/^[0-9a-fA-F]*$/.test(hex) || hex.length !== WRAPPED_KEY_BYTES * 2) {
    throw new CryptoError("KEY_UNWRAP_FAILED", `wrapped key must be ${WRAPPED_KEY_BYTES * 2} hex characters`);
  }
  return openSealed(hex, privateKeyHex);
}

/**
 * ECIES-encrypts any bytes to a public key, in the wrapped-key layout above (ephemeral key || nonce || tag ||
 * ciphertext of the same length as the input), as hex without 0x. Brief keys use it; so do the copies of a hosted
 * agent's secrets made for its owner.
 */
export function sealToPublicKey(plaintext: Uint8Array, recipientPublicKey: string): string {
  return sealToMany(plaintext, [recipientPublicKey])[0]!;
}

/** ECIES to each recipient with one shared ephemeral key (see wrapBriefKeys). */
function sealToMany(plaintext: Uint8Array, recipientPublicKeys: readonly string[]): string[] {
  const recipients = recipientPublicKeys.map((publicKey) => recipientPoint(publicKey));
  const ephemeralSecret = scalarOf(secp256k1.utils.randomSecretKey());
  const ephemeral = Buffer.from(secp256k1.Point.BASE.multiply(ephemeralSecret).toBytes(false));
  return recipients.map((recipient) => sealWith(ephemeral, wrapKey(ephemeral, sharedPoint(recipient, ephemeralSecret)), plaintext));
}

/** One wrap in the layout above: a fresh nonce, AES-256-GCM under the recipient's wrap key. */
function sealWith(ephemeral: Buffer, key: Buffer, plaintext: Uint8Array): string {
  const nonce = randomBytes(WRAP_NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([ephemeral, nonce, cipher.getAuthTag(), body]).toString("hex");
}

function sharedPoint(recipient: CurvePoint, ephemeralSecret: bigint): Buffer {
  return Buffer.from(recipient.multiply(ephemeralSecret).toBytes(false));
}

/** Wraps of many briefs under one ephemeral key (createBriefKeyWrapper). */
export interface BriefKeyWrapper {
  /** As `wrapBriefKeys`, under this wrapper's current ephemeral key; refuses the whole call as it does. */
  wrap(key: Uint8Array, recipientPublicKeys: readonly string[]): string[];
}

/** A wrapper's ephemeral key is replaced after this many wraps, or this long after it was made. */
export const WRAPPER_MAX_WRAPS = 100_000;
export const WRAPPER_MAX_AGE_MS = 10 * 60_000;

/**
 * Wraps brief keys for many briefs, each wrap in the same format as `wrapBriefKeys` (every agent opens it with
 * `unwrapBriefKey`), with one ephemeral key shared by the briefs wrapped within `maxWraps` wraps and `maxAgeMs`: each
 * recipient's wrap key (the HKDF of the ephemeral key and the shared point) is derived once per ephemeral key, and a
 * wrap is then a fresh 16-byte nonce and one AES-256-GCM encryption of the 32-byte brief key, instead of a curve
 * multiplication per recipient (a 1,000-row bulk run wrapping 500 briefs to 20 agents: 10,000 multiplications, about
 * 2.2 s of CPU, against 20 per sealing thread).
 *
 * This is NaCl's `crypto_box_beforenm`: a shared key precomputed per sender and recipient encrypts many messages, each
 * under its own random nonce. AES-GCM with distinct random nonces is secure for many messages under one key (the
 * bounds above keep it far from its limits), and the wraps to one recipient still differ in nonce and ciphertext. What
 * changes: an agent sees that briefs whose wraps carry the same ephemeral key were sealed by one process within a
 * few minutes (a poster's own run; the chain shows who posted them anyway), and a leak of the ephemeral secret
 * opens those briefs' keys, not only one brief's: the secret lives only in this wrapper's memory, beside the brief
 * keys themselves, and is replaced as said.
 */
export function createBriefKeyWrapper({
  maxWraps = WRAPPER_MAX_WRAPS,
  maxAgeMs = WRAPPER_MAX_AGE_MS,
  now = Date.now,
}: { maxWraps?: number; maxAgeMs?: number; now?: () => number } = {}): BriefKeyWrapper {
  let session: { secret: bigint; ephemeral: Buffer; keys: Map<string, Buffer>; wraps: number; madeAt: number } | undefined;
  const fresh = () => {
    const secret = scalarOf(secp256k1.utils.randomSecretKey());
    const ephemeral = Buffer.from(secp256k1.Point.BASE.multiply(secret).toBytes(false));
    return { secret, ephemeral, keys: new Map<string, Buffer>(), wraps: 0, madeAt: now() };
  };
  return {
    wrap(key, recipientPublicKeys) {
      checkBriefKey(key);
      const count = recipientPublicKeys.length;
      if (!session || session.wraps + count > maxWraps || now() - session.madeAt >= maxAgeMs || session.keys.size + count > RECIPIENT_CACHE_SIZE) {
        session = fresh();
      }
      const current = session;
      // Every recipient's wrap key first: a bad public key refuses the call before anything is wrapped.
      const keys = recipientPublicKeys.map((publicKey) => {
        let derived = current.keys.get(publicKey);
        if (!derived) {
          // One multiplication per recipient and ephemeral key: the point as given, not the shared cache's, whose
          // table of multiples (built for wrapBriefKeys' one multiplication per wrap) would cost more than it saves.
          const point = secp256k1.Point.fromHex(normalizePublicKey(publicKey));
          derived = wrapKey(current.ephemeral, sharedPoint(point, current.secret));
          current.keys.set(publicKey, derived);
        }
        return derived;
      });
      current.wraps += count;
      return keys.map((derived) => sealWith(current.ephemeral, derived, key));
    },
  };
}

/** Opens what `sealToPublicKey` sealed, with the recipient's private key. */
export function openSealed(sealedHex: string, privateKeyHex: string): Uint8Array {
  const secret = privateKeyBytes(privateKeyHex);
  const hex = strip0x(sealedHex);
  const header = 65 + WRAP_NONCE_BYTES + BRIEF_TAG_BYTES;
  if (!/^[0-9a-fA-F]*$/.test(hex) || hex.length % 2 !== 0 || hex.length < header * 2) {
    throw new CryptoError("KEY_UNWRAP_FAILED", `sealed data must be at least ${header * 2} hex characters`);
  }
  const bytes = Buffer.from(hex, "hex");
  // A copy, not a view: in the web build (the `buffer` package) a view is a plain Uint8Array, which Buffer.concat refuses.
  const ephemeral = Buffer.from(bytes.subarray(0, 65));
  const nonce = bytes.subarray(65, 65 + WRAP_NONCE_BYTES);
  const tag = bytes.subarray(65 + WRAP_NONCE_BYTES, header);
  const body = bytes.subarray(header);
  try {
    const shared = Buffer.from(secp256k1.getSharedSecret(secret, ephemeral, false));
    const decipher = createDecipheriv("aes-256-gcm", wrapKey(ephemeral, shared), nonce);
    decipher.setAuthTag(tag);
    return new Uint8Array(Buffer.concat([decipher.update(body), decipher.final()]));
  } catch (cause) {
    throw new CryptoError("KEY_UNWRAP_FAILED", "sealed data does not open with this private key", { cause });
  }
}

const WRAP_NONCE_BYTES = 16;
/** Uses of one recipient after which its point gets a table of precomputed multiples. */
const PRECOMPUTE_AFTER_USES = 3;
const RECIPIENT_CACHE_SIZE = 1024;
type CurvePoint = ReturnType<typeof secp256k1.Point.fromHex>;
const recipients = new Map<string, { point: CurvePoint; uses: number }>();

/**
 * The recipient's point, for a public key in any form `normalizePublicKey` accepts (refused as it refuses); the cache
 * keeps the most recent recipients by the key as given, with precomputed multiples once reused.
 */
function recipientPoint(publicKey: string): CurvePoint {
  let entry = recipients.get(publicKey);
  if (entry) recipients.delete(publicKey);
  else entry = { point: secp256k1.Point.fromHex(normalizePublicKey(publicKey)), uses: 0 };
  entry.uses += 1;
  if (entry.uses === PRECOMPUTE_AFTER_USES) entry.point = entry.point.precompute(8, false);
  recipients.set(publicKey, entry);
  if (recipients.size > RECIPIENT_CACHE_SIZE) recipients.delete(recipients.keys().next().value!);
  return entry.point;
}

function scalarOf(secret: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(secret).toString("hex")}`);
}

function wrapKey(ephemeral: Buffer, shared: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", Buffer.concat([ephemeral, shared]), Buffer.alloc(0), Buffer.alloc(0), BRIEF_KEY_BYTES));
}

/**
 * Canonical form of a secp256k1 public key: uncompressed, 130 lowercase hex characters, no 0x. Accepts 0x or not,
 * compressed (66 hex), uncompressed (130 hex) or the bare 64-byte point (128 hex); refuses points off the curve.
 */
export function normalizePublicKey(publicKey: string): string {
  let hex = strip0x(publicKey.trim());
  if (hex.length === 128) hex = `04${hex}`;
  if (!/^[0-9a-fA-F]+$/.test(hex) || (hex.length !== 66 && hex.length !== 130)) {
    throw new CryptoError("INVALID_PUBLIC_KEY", "public key must be 66 or 130 hex characters (secp256k1)");
  }
  try {
    return strip0x(SigningKey.computePublicKey(`0x${hex}`, false));
  } catch (cause) {
    throw new CryptoError("INVALID_PUBLIC_KEY", "public key is not a point on secp256k1", { cause });
  }
}

export function publicKeyFromPrivateKey(privateKeyHex: string): string {
  return strip0x(signingKey(privateKeyHex).publicKey);
}

/** The wallet address (checksummed) that owns a public key in any accepted form. */
export function addressFromPublicKey(publicKey: string): string {
  return computeAddress(`0x${normalizePublicKey(publicKey)}`);
}

/** Task hash of a private task: SHA-256 of the encrypted brief exactly as uploaded. */
export function privateTaskHash(ciphertext: Uint8Array): string {
  return sha256Hex(ciphertext);
}

/** Task hash of a public task: SHA-256 of the brief's UTF-8 text, byte for byte (no trimming or normalising). */
export function publicTaskHash(briefText: string): string {
  return sha256Hex(Buffer.from(briefText, "utf8"));
}

/** Evidence hash submitted on chain for a delivered result: SHA-256 of the output's UTF-8 text. */
export function resultHash(output: string): string {
  return sha256Hex(Buffer.from(output, "utf8"));
}

/** The blob store's `rootHash` for uploaded bytes. */
export function contentHash(bytes: Uint8Array): string {
  return sha256Hex(bytes);
}

function sha256Hex(bytes: Uint8Array): string {
  return `0x${createHash("sha256").update(bytes).digest("hex")}`;
}

function signingKey(privateKeyHex: string): SigningKey {
  const hex = strip0x(privateKeyHex.trim());
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new CryptoError("INVALID_PRIVATE_KEY", "private key must be 64 hex characters");
  }
  try {
    const key = new SigningKey(`0x${hex}`);
    void key.publicKey; // ethers checks the range 0 < key < n only when the point is first computed
    return key;
  } catch (cause) {
    throw new CryptoError("INVALID_PRIVATE_KEY", "private key is outside the secp256k1 range", { cause });
  }
}

function privateKeyBytes(privateKeyHex: string): Uint8Array {
  return Buffer.from(strip0x(signingKey(privateKeyHex).privateKey), "hex");
}

function checkBriefKey(key: Uint8Array): void {
  if (key.length !== BRIEF_KEY_BYTES) {
    throw new CryptoError("INVALID_KEY_LENGTH", `brief key must be ${BRIEF_KEY_BYTES} bytes, got ${key.length}`);
  }
}

function strip0x(hex: string): string {
  return hex.startsWith("0x") || hex.startsWith("0X") ? hex.slice(2) : hex;
}

/**
 * `node:crypto` in the browser build (web/vite.config.ts aliases it here): the five calls core/crypto.ts makes —
 * AES-256-GCM (`createCipheriv`/`createDecipheriv`), SHA-256 (`createHash`), HKDF-SHA256 (`hkdfSync`) and
 * `randomBytes` — on @noble/ciphers and @noble/hashes (audited, synchronous: core/crypto's API stays synchronous) and
 * the page's `crypto.getRandomValues`. The bytes are those of node:crypto (test/web/node-crypto.test.ts seals with one
 * and opens with the other), so a brief encrypted in the page opens in the SDK, the runtime and the server. It also
 * provides the `Buffer` global the SDK and core use, from the `buffer` package.
 */
import { gcm } from "@noble/ciphers/aes";
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha256";
import { Buffer } from "buffer";

const page = globalThis as { Buffer?: unknown };
page.Buffer ??= Buffer;

type Bytes = Uint8Array;
const TAG_BYTES = 16;

const unsupported = (what: string): never => {
  throw new Error(`${what} is not available in the browser build (web/src/node/crypto.ts)`);
};

const bytesOf = (data: string | Bytes, encoding?: string): Buffer =>
  typeof data === "string" ? Buffer.from(data, (encoding ?? "utf8") as BufferEncoding) : Buffer.from(data);

export function randomBytes(size: number): Buffer {
  const out = Buffer.alloc(size);
  crypto.getRandomValues(out);
  return out;
}

/** AES-256-GCM as node:crypto's cipher: the whole message is sealed at `final`. */
export function createCipheriv(algorithm: string, key: Bytes, iv: Bytes) {
  if (algorithm !== "aes-256-gcm") unsupported(algorithm);
  const parts: Buffer[] = [];
  let tag: Buffer | undefined;
  return {
    update(data: string | Bytes, encoding?: string): Buffer {
      parts.push(bytesOf(data, encoding));
      return Buffer.alloc(0);
    },
    final(): Buffer {
      const sealed = gcm(key, iv).encrypt(Buffer.concat(parts));
      tag = Buffer.from(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.from(sealed.subarray(0, sealed.length - TAG_BYTES));
    },
    getAuthTag(): Buffer {
      return tag ?? unsupported("getAuthTag before final");
    },
  };
}

/** AES-256-GCM as node:crypto's decipher: opened (and the tag checked) at `final`. */
export function createDecipheriv(algorithm: string, key: Bytes, iv: Bytes) {
  if (algorithm !== "aes-256-gcm") unsupported(algorithm);
  const parts: Buffer[] = [];
  let tag: Bytes | undefined;
  return {
    setAuthTag(value: Bytes) {
      tag = value;
    },
    update(data: Bytes): Buffer {
      parts.push(Buffer.from(data));
      return Buffer.alloc(0);
    },
    final(): Buffer {
      if (!tag) return unsupported("final without setAuthTag");
      return Buffer.from(gcm(key, iv).decrypt(Buffer.concat([...parts, Buffer.from(tag)])));
    },
  };
}

export function createHash(algorithm: string) {
  if (algorithm !== "sha256") unsupported(algorithm);
  const hash = sha256.create();
  const self = {
    update(data: string | Bytes, encoding?: string) {
      hash.update(bytesOf(data, encoding));
      return self;
    },
    digest(encoding?: "hex"): string | Buffer {
      const out = Buffer.from(hash.digest());
      return encoding === "hex" ? out.toString("hex") : out;
    },
  };
  return self;
}

export function hkdfSync(digest: string, ikm: Bytes, salt: Bytes, info: Bytes, length: number): ArrayBuffer {
  if (digest !== "sha256") unsupported(digest);
  const out = hkdf(sha256, ikm, salt, info, length);
  return out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength) as ArrayBuffer;
}

export default { randomBytes, createCipheriv, createDecipheriv, createHash, hkdfSync };

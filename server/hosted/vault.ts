import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface Vault {
  /** AES-256-GCM under the master key; `context` (e.g. `agent:3:tool:weather`) is bound as associated data. */
  seal(plaintext: string, context: string): string;
  /** Opens what `seal` sealed under the same context; throws on a wrong key, context or altered text. */
  open(sealed: string, context: string): string;
}

/**
 * The server's master key, sealing every custodied secret at rest: `v1.` + base64url(iv || ciphertext || tag). The
 * context binds a sealed value to its row, so a value copied into another agent's row does not open.
 */
export function createVault(masterKeyHex: string): Vault {
  const key = Buffer.from(masterKeyHex.replace(/^0x/i, ""), "hex");
  if (key.length !== 32) throw new Error("the master key must be 32 bytes");
  return {
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(context, "utf8"));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return `${VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url")}`;
    },
    open(sealed, context) {
      const [version, payload] = sealed.split(".");
      if (version !== VERSION || !payload) throw new Error("not a sealed value");
      const bytes = Buffer.from(payload, "base64url");
      const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    },
  };
}

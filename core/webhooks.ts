import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Standard Webhooks (https://www.standardwebhooks.com): a delivery carries `webhook-id`, `webhook-timestamp` (Unix
 * seconds) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 over `id.timestamp.body` under the secret's bytes). The
 * secret is `whsec_` + base64 of 32 random bytes. The server signs with it; the SDK verifies with it; the
 * `standardwebhooks` package verifies the same signatures (test/server/webhooks.test.ts).
 */
export const WEBHOOK_SECRET_PREFIX = "whsec_";

/** How far a delivery's timestamp may be from the receiver's clock (seconds), as the standard's libraries allow. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString("base64")}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret, "base64");
}

/** The `webhook-signature` value of a delivery. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
}

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

/**
 * Checks a delivery's headers against its raw body: one of the space-separated `v1,` signatures must match, and the
 * timestamp be within the tolerance of `nowSeconds`. Returns the parsed body; throws WebhookVerificationError.
 */
export function verifyWebhook(
  secret: string,
  body: string,
  headers: Record<string, string | string[] | undefined>,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): unknown {
  const header = (name: string) => {
    const value = headers[name] ?? headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  const id = header("webhook-id");
  const timestamp = header("webhook-timestamp");
  const signatures = header("webhook-signature");
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook headers");
  const seconds = Number(timestamp);
  if (!/^[0-9]{1,12}$/.test(timestamp) || Math.abs(nowSeconds - seconds) > WEBHOOK_TOLERANCE_SECONDS) {
    throw new WebhookVerificationError("timestamp outside the tolerance");
  }
  const expected = Buffer.from(signWebhook(secret, id, seconds, body).slice(3), "base64");
  const match = signatures.split(" ").some((candidate) => {
    const [version, value] = candidate.split(",");
    if (version !== "v1" || !value) return false;
    const given = Buffer.from(value, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!match) throw new WebhookVerificationError("no matching signature");
  return JSON.parse(body) as unknown;
}

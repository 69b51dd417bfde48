/**
 * Wallet sign-in (EIP-4361), sessions, API keys, rate limits and what reaches the logs, through the HTTP API.
 */
import { createHash } from "node:crypto";
import { expect } from "chai";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { startTestServer, PUBLIC_URL, type Answer, type TestServer } from "./harness";
import { AUTH_SWEEP_INTERVAL_MS, EXPIRED_SESSION_KEPT_MS, NONCE_TTL_MS, SESSION_TTL_MS } from "../../server/auth";
import { formatSignInMessage, parseSignInMessage, type SignInMessage } from "@market/core/siwe";

interface Nonce {
  nonce: string;
  message: string;
  expiresAt: number;
}
interface Session {
  token: string;
  expiresAt: number;
  address: string;
  accountId: number;
}
interface CreatedKey {
  id: number;
  key: string;
  prefix: string;
  name: string;
  wallet: string;
  createdAt: number;
}
interface Whoami {
  addresses: string[];
  accountId: number;
  via: "apiKey" | "session";
  keyId?: number;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function expectError(answer: Answer, status: number, code: string) {
  expect(answer.body.error?.code, JSON.stringify(answer.body)).to.equal(code);
  expect(answer.status).to.equal(status);
  expect(answer.body.success).to.equal(false);
}

/** Sign-in steps over the API. */
function signInFlow(s: TestServer) {
  const nonce = (address: string) => s.call<Nonce>("POST", "/api/v1/auth/nonce", { body: { address } });
  const verify = (message: string, signature: string) => s.call<Session>("POST", "/api/v1/auth/verify", { body: { message, signature } });

  async function messageFor(signer: HardhatEthersSigner): Promise<string> {
    const answer = await nonce(signer.address);
    expect(answer.status).to.equal(200);
    return answer.body.data.message;
  }

  async function signIn(signer: HardhatEthersSigner): Promise<Session> {
    const message = await messageFor(signer);
    const answer = await verify(message, await signer.signMessage(message));
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    return answer.body.data;
  }

  async function createKey(headers: Record<string, string>, name = "key"): Promise<CreatedKey> {
    const answer = await s.call<CreatedKey>("POST", "/api/v1/api-keys", { body: { name }, headers });
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    return answer.body.data;
  }

  const whoami = (headers: Record<string, string>) => s.call<Whoami>("GET", "/api/v1/api-keys/whoami", { headers });

  /** A message made for POST /api/v1/auth/link. */
  async function linkMessageFor(signer: HardhatEthersSigner): Promise<string> {
    const answer = await s.call<Nonce>("POST", "/api/v1/auth/nonce", { body: { address: signer.address, purpose: "link" } });
    expect(answer.status).to.equal(200);
    return answer.body.data.message;
  }

  return { nonce, verify, messageFor, linkMessageFor, signIn, createKey, whoami };
}

/** The same message with some fields changed, as a client might forge it. */
function edited(message: string, changes: Partial<SignInMessage>): string {
  const parsed = parseSignInMessage(message);
  if (!parsed) throw new Error("the server's message does not parse");
  return formatSignInMessage({ ...parsed, ...changes });
}

describe("server: authentication", function () {
  let s: TestServer;
  let flow: ReturnType<typeof signInFlow>;

  beforeEach(async function () {
    s = await startTestServer();
    flow = signInFlow(s);
  });
  afterEach(async function () {
    await s.close();
  });

  describe("sign-in (EIP-4361)", function () {
    it("issues a message for this domain and chain, and signs in with it", async function () {
      const issued = await flow.nonce(s.poster.address.toLowerCase());
      expect(issued.status).to.equal(200);
      const parsed = parseSignInMessage(issued.body.data.message);
      expect(parsed).to.not.equal(undefined);
      expect(parsed!.domain).to.equal(new URL(PUBLIC_URL).host);
      expect(parsed!.uri).to.equal(PUBLIC_URL);
      expect(parsed!.address).to.equal(s.poster.address); // checksummed
      expect(parsed!.chainId).to.equal(s.chainConfig.chainId);
      expect(parsed!.nonce).to.equal(issued.body.data.nonce);
      expect(Date.parse(parsed!.expirationTime!)).to.equal(issued.body.data.expiresAt);

      const session = await flow.verify(issued.body.data.message, await s.poster.signMessage(issued.body.data.message));
      expect(session.status).to.equal(200);
      expect(session.body.data.address).to.equal(s.poster.address);
      expect(session.body.data.expiresAt - Date.now()).to.be.closeTo(SESSION_TTL_MS, 60_000);

      const me = await flow.whoami(bearer(session.body.data.token));
      expect(me.status).to.equal(200);
      expect(me.body.data).to.deep.equal({ addresses: [s.poster.address], accountId: session.body.data.accountId, via: "session" });
      // The token is stored only as its SHA-256.
      const rows = await s.db.selectFrom("sessions").selectAll().execute();
      expect(rows).to.have.length(1);
      expect(rows[0]!.token_hash).to.equal(createHash("sha256").update(session.body.data.token).digest("hex"));
    });

    it("signing in again with the same wallet reaches the same account", async function () {
      const first = await flow.signIn(s.poster);
      const second = await flow.signIn(s.poster);
      expect(second.accountId).to.equal(first.accountId);
      expect(second.token).to.not.equal(first.token);
      expect(await s.db.selectFrom("accounts").selectAll().execute()).to.have.length(1);
    });

    it("refuses a nonce for a malformed address, naming body.address", async function () {
      for (const address of ["0x123", "poster", "0x" + "g".repeat(40), 42, null]) {
        const answer = await flow.nonce(address as string);
        expectError(answer, 400, "VALIDATION_FAILED");
        expect(answer.body.error.details?.[0]?.field).to.equal("body.address");
      }
      const missing = await s.call("POST", "/api/v1/auth/nonce", { body: {} });
      expectError(missing, 400, "VALIDATION_FAILED");
      expect(missing.body.error.details?.[0]?.field).to.equal("body.address");
      expect(await s.db.selectFrom("auth_nonces").selectAll().execute()).to.have.length(0);
    });

    it("refuses a mixed-case address whose EIP-55 checksum is wrong (400, not a crash)", async function () {
      const bad =
        s.poster.address.slice(0, 2) +
        [...s.poster.address.slice(2)].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("");
      const answer = await flow.nonce(bad);
      expectError(answer, 400, "VALIDATION_FAILED");
      expect(answer.body.error.details?.[0]?.field).to.equal("body.address");
    });

    it("refuses a signature over other text (SIGNATURE_MISMATCH)", async function () {
      const message = await flow.messageFor(s.poster);
      const answer = await flow.verify(message, await s.poster.signMessage("something else"));
      expectError(answer, 401, "SIGNATURE_MISMATCH");
    });

    it("refuses a malformed signature of the right length (SIGNATURE_MISMATCH)", async function () {
      const message = await flow.messageFor(s.poster);
      expectError(await flow.verify(message, "0x" + "00".repeat(65)), 401, "SIGNATURE_MISMATCH");
      const shape = await flow.verify(message, "0x1234");
      expectError(shape, 400, "VALIDATION_FAILED");
      expect(shape.body.error.details?.[0]?.field).to.equal("body.signature");
    });

    it("refuses the wallet's message signed by another wallet, and nothing is created", async function () {
      const message = await flow.messageFor(s.poster);
      const answer = await flow.verify(message, await s.stranger.signMessage(message));
      expectError(answer, 401, "SIGNATURE_MISMATCH");
      expect(await s.db.selectFrom("sessions").selectAll().execute()).to.have.length(0);
      expect(await s.db.selectFrom("accounts").selectAll().execute()).to.have.length(0);
      // The nonce was not consumed by the failed attempt: the rightful wallet can still use it.
      expect((await flow.verify(message, await s.poster.signMessage(message))).status).to.equal(200);
    });

    it("uses a nonce once (NONCE_INVALID)", async function () {
      const message = await flow.messageFor(s.poster);
      const signature = await s.poster.signMessage(message);
      expect((await flow.verify(message, signature)).status).to.equal(200);
      expectError(await flow.verify(message, signature), 401, "NONCE_INVALID");
    });

    it("refuses a nonce issued for another wallet, or never issued (NONCE_INVALID)", async function () {
      const issuedToPoster = await flow.messageFor(s.poster);
      const forged = edited(issuedToPoster, { address: s.stranger.address });
      expectError(await flow.verify(forged, await s.stranger.signMessage(forged)), 401, "NONCE_INVALID");
      const invented = edited(issuedToPoster, { nonce: "abcdef0123456789abcdef0123456789" });
      expectError(await flow.verify(invented, await s.poster.signMessage(invented)), 401, "NONCE_INVALID");
    });

    it("refuses an expired nonce: the message's own expiry, and the nonce's expiry behind it", async function () {
      const message = await flow.messageFor(s.poster);
      s.advanceClock(NONCE_TTL_MS + 1_000);
      const answer = await flow.verify(message, await s.poster.signMessage(message));
      expectError(answer, 400, "SIGN_IN_MESSAGE_INVALID");
      expect(answer.body.error.message).to.match(/expired/);
      // Without the expiration line the message is valid, but its nonce is not.
      const { expirationTime: _dropped, ...fields } = parseSignInMessage(message)!;
      const undated = formatSignInMessage(fields);
      expectError(await flow.verify(undated, await s.poster.signMessage(undated)), 401, "NONCE_INVALID");
    });

    it("accepts a nonce just before it expires", async function () {
      const message = await flow.messageFor(s.poster);
      s.advanceClock(NONCE_TTL_MS - 5_000);
      expect((await flow.verify(message, await s.poster.signMessage(message))).status).to.equal(200);
    });

    it("refuses a message for another domain or another chain (SIGN_IN_MESSAGE_INVALID)", async function () {
      const message = await flow.messageFor(s.poster);
      for (const changes of [{ domain: "evil.example" }, { chainId: s.chainConfig.chainId + 1 }, { chainId: 1 }]) {
        const forged = edited(message, changes);
        expectError(await flow.verify(forged, await s.poster.signMessage(forged)), 400, "SIGN_IN_MESSAGE_INVALID");
      }
      // The nonce is still good for the genuine message.
      expect((await flow.verify(message, await s.poster.signMessage(message))).status).to.equal(200);
    });

    it("refuses malformed messages (SIGN_IN_MESSAGE_INVALID), and over-long ones by schema", async function () {
      const message = await flow.messageFor(s.poster);
      const malformed = [
        "hello",
        message.replace(/^Nonce: .*$/m, "Nonce: !!"),
        message.replace(/^Version: 1$/m, "Version: 2"),
        message.replace(/^Chain ID: .*$/m, "Chain ID: one"),
        message.replace(/^Issued At: .*$/m, "Issued At: yesterday"),
        message.replace(/^URI: .*\n/m, ""),
        `${message}\nResources: none`,
        `${message}\nNonce: abcdefgh12345678`,
        message.replace("\n\n", "\n"),
        message.split("\n").slice(0, 3).join("\n"),
      ];
      for (const text of malformed) {
        const answer = await flow.verify(text, await s.poster.signMessage(text));
        expectError(answer, 400, "SIGN_IN_MESSAGE_INVALID");
      }
      const long = await flow.verify("x".repeat(4001), await s.poster.signMessage("x"));
      expectError(long, 400, "VALIDATION_FAILED");
      expect(long.body.error.details?.[0]?.field).to.equal("body.message");
      expect(await s.db.selectFrom("sessions").selectAll().execute()).to.have.length(0);
    });

    it("expires sessions (INVALID_TOKEN), while API keys made from them keep working", async function () {
      const session = await flow.signIn(s.poster);
      const key = await flow.createKey(bearer(session.token));
      s.advanceClock(SESSION_TTL_MS + 1_000);
      const answer = await flow.whoami(bearer(session.token));
      expectError(answer, 401, "INVALID_TOKEN");
      expect((answer.body.error as { reason?: string }).reason).to.equal("SESSION_EXPIRED");
      expectError(await s.call("POST", "/api/v1/api-keys", { body: { name: "late" }, headers: bearer(session.token) }), 401, "INVALID_TOKEN");
      expect((await flow.whoami({ "x-api-key": key.key })).status).to.equal(200);
    });

    it("deletes expired nonces, and sessions a week past expiry, as sign-ins come in", async function () {
      const old = await flow.signIn(s.poster);
      const unused = await flow.messageFor(s.stranger);
      const count = async (table: "auth_nonces" | "sessions") => (await s.db.selectFrom(table).selectAll().execute()).length;
      expect(await count("auth_nonces")).to.equal(2);

      s.advanceClock(SESSION_TTL_MS + AUTH_SWEEP_INTERVAL_MS);
      await flow.messageFor(s.poster);
      // Both earlier nonces are gone; the expired session stays, still answered SESSION_EXPIRED.
      expect(await count("auth_nonces")).to.equal(1);
      expect(await count("sessions")).to.equal(1);
      expect(((await flow.whoami(bearer(old.token))).body.error as { reason?: string }).reason).to.equal("SESSION_EXPIRED");
      expectError(await flow.verify(unused, await s.stranger.signMessage(unused)), 400, "SIGN_IN_MESSAGE_INVALID");

      s.advanceClock(EXPIRED_SESSION_KEPT_MS);
      const fresh = await flow.signIn(s.poster);
      expect(await count("sessions")).to.equal(1);
      expect((await flow.whoami(bearer(fresh.token))).status).to.equal(200);
      const gone = await flow.whoami(bearer(old.token));
      expectError(gone, 401, "INVALID_TOKEN");
      expect((gone.body.error as { reason?: string }).reason).to.equal(undefined);
    });
  });

  describe("API keys", function () {
    it("creates a key from a session: sk_ + 32 random bytes, shown once, stored as its SHA-256", async function () {
      const session = await flow.signIn(s.poster);
      const created = await flow.createKey(bearer(session.token), "laptop");
      expect(created.key).to.match(/^sk_[A-Za-z0-9_-]+$/);
      expect(Buffer.from(created.key.slice(3), "base64url").length).to.be.at.least(32);
      expect(created.prefix).to.equal(created.key.slice(0, created.prefix.length));
      expect(created.prefix.length).to.be.below(created.key.length - 32);
      expect(created).to.include({ name: "laptop", wallet: s.poster.address });
      const other = await flow.createKey(bearer(session.token), "server");
      expect(other.key).to.not.equal(created.key);

      const listed = await s.call<{ keys: Array<Record<string, unknown>> }>("GET", "/api/v1/api-keys", { headers: bearer(session.token) });
      expect(listed.status).to.equal(200);
      expect(listed.body.data.keys.map((k) => k.name)).to.deep.equal(["laptop", "server"]);
      const listedText = JSON.stringify(listed.body);
      for (const key of [created.key, other.key]) {
        expect(listedText).to.not.include(key);
        expect(listedText).to.not.include(key.slice(3));
      }
      for (const k of listed.body.data.keys)
        expect(Object.keys(k).sort()).to.deep.equal(["createdAt", "id", "lastUsedAt", "name", "prefix", "revokedAt", "wallet"]);

      const rows = await s.db.selectFrom("api_keys").selectAll().orderBy("id").execute();
      expect(rows.map((r) => r.key_hash)).to.deep.equal([created.key, other.key].map((k) => createHash("sha256").update(k).digest("hex")));
      const stored = JSON.stringify(rows);
      for (const key of [created.key, other.key]) expect(stored).to.not.include(key.slice(3));
    });

    it("creates a key from another key, acting as the same wallet; a key answers whoami with one address", async function () {
      const key = await s.apiKeyFor(s.poster);
      const child = await flow.createKey({ "x-api-key": key }, "child");
      expect(child.wallet).to.equal(s.poster.address);
      const me = await flow.whoami({ "x-api-key": child.key });
      expect(me.status).to.equal(200);
      expect(me.body.data.addresses).to.deep.equal([s.poster.address]);
      expect(me.body.data.via).to.equal("apiKey");
      expect(me.body.data.keyId).to.equal(child.id);
      // A key sent as a Bearer token works too.
      expect((await flow.whoami(bearer(child.key))).body.data.keyId).to.equal(child.id);
    });

    it("records when a key was last used", async function () {
      const key = await s.apiKeyFor(s.poster);
      const before = await s.db.selectFrom("api_keys").select("last_used_at").executeTakeFirstOrThrow();
      expect(before.last_used_at).to.equal(null);
      await flow.whoami({ "x-api-key": key });
      const after = await s.db.selectFrom("api_keys").select("last_used_at").executeTakeFirstOrThrow();
      expect(after.last_used_at).to.be.a("number");
    });

    it("acts as the account's first linked wallet, even when made from a later wallet's session", async function () {
      const session = await flow.signIn(s.poster);
      const linkMessage = await flow.linkMessageFor(s.stranger);
      const linked = await s.call<{ wallets: string[] }>("POST", "/api/v1/auth/link", {
        body: { message: linkMessage, signature: await s.stranger.signMessage(linkMessage) },
        headers: bearer(session.token),
      });
      expect(linked.status, JSON.stringify(linked.body)).to.equal(200);
      expect(linked.body.data.wallets).to.deep.equal([s.poster.address, s.stranger.address]);

      const key = await flow.createKey(bearer(session.token));
      expect(key.wallet).to.equal(s.poster.address);
      expect((await flow.whoami({ "x-api-key": key.key })).body.data.addresses).to.deep.equal([s.poster.address]);

      // The second wallet signs in to the same account; its keys still act as the first wallet.
      const strangerSession = await flow.signIn(s.stranger);
      expect(strangerSession.accountId).to.equal(session.accountId);
      // A session's whoami lists every wallet of the account, its own first; the first wallet's session too.
      expect((await flow.whoami(bearer(strangerSession.token))).body.data.addresses).to.deep.equal([s.stranger.address, s.poster.address]);
      expect((await flow.whoami(bearer(session.token))).body.data.addresses).to.deep.equal([s.poster.address, s.stranger.address]);
      const fromSecond = await flow.createKey(bearer(strangerSession.token));
      expect(fromSecond.wallet).to.equal(s.poster.address);
      expect((await flow.whoami({ "x-api-key": fromSecond.key })).body.data.addresses).to.deep.equal([s.poster.address]);

      // Linking an already linked wallet again is harmless.
      const again = await flow.linkMessageFor(s.stranger);
      const relinked = await s.call<{ wallets: string[] }>("POST", "/api/v1/auth/link", {
        body: { message: again, signature: await s.stranger.signMessage(again) },
        headers: bearer(session.token),
      });
      expect(relinked.body.data.wallets).to.deep.equal([s.poster.address, s.stranger.address]);
    });

    it("refuses to link a wallet that belongs to another account (WALLET_ALREADY_LINKED)", async function () {
      await flow.signIn(s.worker);
      const session = await flow.signIn(s.poster);
      const message = await flow.linkMessageFor(s.worker);
      const answer = await s.call("POST", "/api/v1/auth/link", {
        body: { message, signature: await s.worker.signMessage(message) },
        headers: bearer(session.token),
      });
      expectError(answer, 409, "WALLET_ALREADY_LINKED");
      const wallets = await s.db.selectFrom("account_wallets").selectAll().orderBy("account_id").execute();
      expect(wallets.map((w) => w.address)).to.deep.equal([s.worker.address, s.poster.address]);
    });

    it("links only with a session: an API key gets SESSION_REQUIRED, no credential AUTH_REQUIRED", async function () {
      const key = await s.apiKeyFor(s.poster);
      const message = await flow.linkMessageFor(s.stranger);
      const body = { message, signature: await s.stranger.signMessage(message) };
      expectError(await s.call("POST", "/api/v1/auth/link", { body, key }), 403, "SESSION_REQUIRED");
      expectError(await s.call("POST", "/api/v1/auth/link", { body }), 401, "AUTH_REQUIRED");
      // The link is refused before the nonce is used: a session can still link with that message.
      const session = await flow.signIn(s.poster);
      expect((await s.call("POST", "/api/v1/auth/link", { body, headers: bearer(session.token) })).status).to.equal(200);
      expect(await s.db.selectFrom("account_wallets").selectAll().execute()).to.have.length(2);
    });

    it("a sign-in message never links and a link message never signs in; URI and issue time are checked", async function () {
      const session = await flow.signIn(s.poster);
      const signInMessage = await flow.messageFor(s.stranger);
      const linkAnswer = await s.call("POST", "/api/v1/auth/link", {
        body: { message: signInMessage, signature: await s.stranger.signMessage(signInMessage) },
        headers: bearer(session.token),
      });
      expectError(linkAnswer, 400, "SIGN_IN_MESSAGE_INVALID");
      const linkMessage = await flow.linkMessageFor(s.stranger);
      expectError(await flow.verify(linkMessage, await s.stranger.signMessage(linkMessage)), 400, "SIGN_IN_MESSAGE_INVALID");
      for (const changes of [
        { uri: "http://evil.example" },
        { issuedAt: new Date(Date.now() + 3_600_000).toISOString() },
        { issuedAt: new Date(Date.now() - 3_600_000).toISOString() },
      ]) {
        const forged = edited(await flow.messageFor(s.stranger), changes);
        expectError(await flow.verify(forged, await s.stranger.signMessage(forged)), 400, "SIGN_IN_MESSAGE_INVALID");
      }
      // Neither refusal used the nonces: the same messages still work where they belong.
      expect(
        (
          await s.call("POST", "/api/v1/auth/link", {
            body: { message: linkMessage, signature: await s.stranger.signMessage(linkMessage) },
            headers: bearer(session.token),
          })
        ).status,
      ).to.equal(200);
      expect((await flow.verify(signInMessage, await s.stranger.signMessage(signInMessage))).status).to.equal(200);
    });

    it("a link with a bad signature is refused like a sign-in", async function () {
      const session = await flow.signIn(s.poster);
      const message = await flow.linkMessageFor(s.stranger);
      const answer = await s.call("POST", "/api/v1/auth/link", {
        body: { message, signature: await s.poster.signMessage(message) },
        headers: bearer(session.token),
      });
      expectError(answer, 401, "SIGNATURE_MISMATCH");
    });

    it("revokes one key (then INVALID_TOKEN); KEY_NOT_FOUND for unknown ids and other accounts' keys", async function () {
      const session = await flow.signIn(s.poster);
      const a = await flow.createKey(bearer(session.token), "a");
      const b = await flow.createKey(bearer(session.token), "b");
      const revoked = await s.call<{ revoked: boolean }>("DELETE", `/api/v1/api-keys/${a.id}`, { key: b.key });
      expect(revoked.status).to.equal(200);
      expect(revoked.body.data.revoked).to.equal(true);
      expectError(await flow.whoami({ "x-api-key": a.key }), 401, "INVALID_TOKEN");
      expectError(await flow.whoami(bearer(a.key)), 401, "INVALID_TOKEN");
      expect((await flow.whoami({ "x-api-key": b.key })).status).to.equal(200);
      // Revoking twice is not an error, and says it changed nothing (issue 29, item 14); the listing shows when.
      const again = await s.call<{ revoked: boolean }>("DELETE", `/api/v1/api-keys/${a.id}`, { key: b.key });
      expect(again.status).to.equal(200);
      expect(again.body.data.revoked).to.equal(false);
      const listed = await s.call<{ keys: Array<{ id: number; revokedAt: number | null }> }>("GET", "/api/v1/api-keys", { key: b.key });
      expect(listed.body.data.keys.find((k) => k.id === a.id)!.revokedAt).to.be.a("number");

      expectError(await s.call("DELETE", "/api/v1/api-keys/999999", { key: b.key }), 404, "KEY_NOT_FOUND");
      // Beyond a PostgreSQL serial (int4): still no such key, not a failed query.
      expectError(await s.call("DELETE", "/api/v1/api-keys/999999999999", { key: b.key }), 404, "KEY_NOT_FOUND");
      const strangerKey = await s.apiKeyFor(s.stranger);
      expectError(await s.call("DELETE", `/api/v1/api-keys/${b.id}`, { key: strangerKey }), 404, "KEY_NOT_FOUND");
      expect((await flow.whoami({ "x-api-key": b.key })).status).to.equal(200);
      const badId = await s.call("DELETE", "/api/v1/api-keys/abc", { key: b.key });
      expectError(badId, 400, "VALIDATION_FAILED");
      expect(badId.body.error.details?.[0]?.field).to.equal("params.id");
    });

    it("revokes every key and ends every session of the account at once; other accounts keep theirs", async function () {
      const session = await flow.signIn(s.poster);
      const second = await flow.signIn(s.poster);
      const keys = [
        await flow.createKey(bearer(session.token)),
        await flow.createKey(bearer(session.token)),
        await flow.createKey(bearer(session.token)),
      ];
      const strangerKey = await s.apiKeyFor(s.stranger);
      const strangerSession = await flow.signIn(s.stranger);
      const answer = await s.call<{ revoked: number; sessionsRevoked: number }>("POST", "/api/v1/api-keys/revoke-all", { key: keys[0]!.key });
      expect(answer.status).to.equal(200);
      expect(answer.body.data).to.deep.equal({ revoked: 3, sessionsRevoked: 2 });
      for (const k of keys) expectError(await flow.whoami({ "x-api-key": k.key }), 401, "INVALID_TOKEN");
      expectError(await flow.whoami(bearer(session.token)), 401, "INVALID_TOKEN");
      expectError(await flow.whoami(bearer(second.token)), 401, "INVALID_TOKEN");
      expect((await flow.whoami({ "x-api-key": strangerKey })).status).to.equal(200);
      expect((await flow.whoami(bearer(strangerSession.token))).status).to.equal(200);
    });

    it("logout ends the presented session only; an API key is refused with SESSION_REQUIRED", async function () {
      const session = await flow.signIn(s.poster);
      const other = await flow.signIn(s.poster);
      const key = await flow.createKey(bearer(session.token));
      expectError(await s.call("POST", "/api/v1/auth/logout", { key: key.key }), 403, "SESSION_REQUIRED");
      expectError(await s.call("POST", "/api/v1/auth/logout"), 401, "AUTH_REQUIRED");
      const out = await s.call<{ loggedOut: boolean }>("POST", "/api/v1/auth/logout", { headers: bearer(session.token) });
      expect(out.status).to.equal(200);
      expect(out.body.data).to.deep.equal({ loggedOut: true });
      expectError(await flow.whoami(bearer(session.token)), 401, "INVALID_TOKEN");
      expectError(await s.call("POST", "/api/v1/auth/logout", { headers: bearer(session.token) }), 401, "INVALID_TOKEN");
      expect((await flow.whoami(bearer(other.token))).status).to.equal(200);
      expect((await flow.whoami({ "x-api-key": key.key })).status).to.equal(200);
    });

    it("refuses a key without a name, or with unknown fields", async function () {
      const key = await s.apiKeyFor(s.poster);
      for (const body of [{}, { name: "" }, { name: "x".repeat(101) }, { name: "k", wallet: s.stranger.address }]) {
        expectError(await s.call("POST", "/api/v1/api-keys", { body, key }), 400, "VALIDATION_FAILED");
      }
    });
  });

  describe("credentials", function () {
    it("AUTH_REQUIRED without credentials on every keyed route", async function () {
      const routes: Array<["GET" | "POST" | "DELETE", string, unknown?]> = [
        ["GET", "/api/v1/api-keys/whoami"],
        ["GET", "/api/v1/api-keys"],
        ["POST", "/api/v1/api-keys", { name: "k" }],
        ["POST", "/api/v1/api-keys/revoke-all"],
        ["DELETE", "/api/v1/api-keys/1"],
        ["POST", "/api/v1/storage/upload", { data: "aGVsbG8=" }],
        ["POST", "/api/v1/a2a/register", {}],
        ["GET", "/api/v1/a2a/tasks/posted"],
      ];
      for (const [method, url, body] of routes) {
        expectError(await s.call(method, url, { body }), 401, "AUTH_REQUIRED");
        // An empty header is the same as none.
        expectError(await s.call(method, url, { body, headers: { "x-api-key": "" } }), 401, "AUTH_REQUIRED");
      }
    });

    it("INVALID_TOKEN for a garbage key and for a bad Authorization header", async function () {
      const key = await s.apiKeyFor(s.poster);
      const bad: Array<Record<string, string>> = [
        { "x-api-key": "sk_garbage" },
        { "x-api-key": "not-a-key" },
        { "x-api-key": `${key}x` },
        { "x-api-key": key.toUpperCase() },
        { authorization: "Bearer garbage" },
        { authorization: "Bearer sk_garbage" },
        { authorization: "Bearer" },
        { authorization: "Bearer a b" },
        { authorization: `Basic ${Buffer.from("user:pass").toString("base64")}` },
        { authorization: key },
      ];
      for (const headers of bad) expectError(await flow.whoami(headers), 401, "INVALID_TOKEN");
      // The key header wins over Authorization: a good key with a bad bearer still works, and the reverse fails.
      expect((await flow.whoami({ "x-api-key": key, authorization: "Bearer garbage" })).status).to.equal(200);
      expectError(await flow.whoami({ "x-api-key": "sk_garbage", authorization: `Bearer ${key}` }), 401, "INVALID_TOKEN");
      // Public routes also refuse a wrong credential rather than ignoring it.
      expectError(await s.call("GET", "/api/v1/a2a/tasks", { headers: { "x-api-key": "sk_garbage" } }), 401, "INVALID_TOKEN");
    });
  });

  describe("rate limits", function () {
    let limited: TestServer;
    afterEach(async function () {
      await limited?.close();
    });

    it("limits each client IP: 429 RATE_LIMITED with Retry-After, other IPs unaffected, reset after the window", async function () {
      limited = await startTestServer({ rateLimit: { perIp: 5, perKey: 1_000, windowMs: 60_000 } });
      const from = (remoteAddress: string) => limited.app.inject({ method: "GET", url: "/health", remoteAddress });
      for (let i = 0; i < 5; i++) expect((await from("10.0.0.1")).statusCode).to.equal(200);
      const refused = await from("10.0.0.1");
      expect(refused.statusCode).to.equal(429);
      expect(refused.json().error.code).to.equal("RATE_LIMITED");
      const retryAfter = Number(refused.headers["retry-after"]);
      expect(retryAfter).to.be.within(1, 60);
      expect(Number.isInteger(retryAfter)).to.equal(true);
      expect((await from("10.0.0.2")).statusCode).to.equal(200);
      // Every route shares the IP's budget, including unknown ones.
      expect((await limited.app.inject({ method: "GET", url: "/nope", remoteAddress: "10.0.0.1" })).statusCode).to.equal(429);
      limited.advanceClock(60_000);
      expect((await from("10.0.0.1")).statusCode).to.equal(200);
    });

    it("limits each credential across IPs, before checking it", async function () {
      limited = await startTestServer({ rateLimit: { perIp: 1_000, perKey: 3, windowMs: 60_000 } });
      const key = await limited.apiKeyFor(limited.poster);
      const other = await limited.apiKeyFor(limited.stranger);
      const whoami = (headers: Record<string, string>, remoteAddress: string) =>
        limited.app.inject({ method: "GET", url: "/api/v1/api-keys/whoami", headers, remoteAddress });
      for (let i = 0; i < 3; i++) expect((await whoami({ "x-api-key": key }, `10.0.1.${i}`)).statusCode).to.equal(200);
      const refused = await whoami({ "x-api-key": key }, "10.0.1.9");
      expect(refused.statusCode).to.equal(429);
      expect(refused.json().error.code).to.equal("RATE_LIMITED");
      expect(Number(refused.headers["retry-after"])).to.be.within(1, 60);
      expect((await whoami({ "x-api-key": other }, "10.0.1.9")).statusCode).to.equal(200);
      expect((await limited.app.inject({ method: "GET", url: "/health", remoteAddress: "10.0.1.9" })).statusCode).to.equal(200);
      // Garbage credentials are limited too, so guessing keys is slow.
      for (let i = 0; i < 3; i++) expect((await whoami({ "x-api-key": "sk_guess" }, "10.0.2.1")).statusCode).to.equal(401);
      expect((await whoami({ "x-api-key": "sk_guess" }, "10.0.2.1")).statusCode).to.equal(429);
      limited.advanceClock(61_000);
      expect((await whoami({ "x-api-key": key }, "10.0.1.9")).statusCode).to.equal(200);
    });

    it("counts one key in one window however it is spelled: X-API-Key, Bearer in any case or spacing, an empty X-API-Key beside it", async function () {
      limited = await startTestServer({ rateLimit: { perIp: 1_000, perKey: 3, windowMs: 60_000 } });
      const key = await limited.apiKeyFor(limited.poster);
      const spellings: Array<Record<string, string>> = [
        { "x-api-key": key },
        { authorization: `Bearer ${key}` },
        { authorization: `bearer  ${key}` },
        { authorization: `BEARER\t${key}` },
        { "x-api-key": "", authorization: `Bearer ${key}` },
      ];
      const statuses: number[] = [];
      for (const [i, headers] of spellings.entries()) {
        const answer = await limited.app.inject({ method: "GET", url: "/api/v1/api-keys/whoami", headers, remoteAddress: `10.0.3.${i}` });
        statuses.push(answer.statusCode);
      }
      expect(statuses).to.deep.equal([200, 200, 200, 429, 429]);
    });

    it("counts the client X-Forwarded-For names only when the request comes through a trusted proxy", async function () {
      limited = await startTestServer({ rateLimit: { perIp: 2, perKey: 1_000, windowMs: 60_000 }, trustProxy: ["10.9.9.9"] });
      const via = (remoteAddress: string, client: string) =>
        limited.app.inject({ method: "GET", url: "/health", remoteAddress, headers: { "x-forwarded-for": client } });
      // Through the proxy, each client has its own budget.
      for (let i = 0; i < 2; i++) expect((await via("10.9.9.9", "203.0.113.1")).statusCode).to.equal(200);
      expect((await via("10.9.9.9", "203.0.113.1")).statusCode).to.equal(429);
      expect((await via("10.9.9.9", "203.0.113.2")).statusCode).to.equal(200);
      // Anyone else forging the header is counted by their own address.
      expect((await via("10.0.3.1", "203.0.113.3")).statusCode).to.equal(200);
      expect((await via("10.0.3.1", "203.0.113.4")).statusCode).to.equal(200);
      expect((await via("10.0.3.1", "203.0.113.5")).statusCode).to.equal(429);
    });

    it("with a hop count, takes the client that many hops back in X-Forwarded-For", async function () {
      limited = await startTestServer({ rateLimit: { perIp: 1, perKey: 1_000, windowMs: 60_000 }, trustProxy: 1 });
      const via = (chain: string) =>
        limited.app.inject({ method: "GET", url: "/health", remoteAddress: "10.0.5.1", headers: { "x-forwarded-for": chain } });
      // One trusted hop: the last address in the header is the client; what the client wrote before it is ignored.
      expect((await via("198.51.100.1, 203.0.113.1")).statusCode).to.equal(200);
      expect((await via("198.51.100.2, 203.0.113.1")).statusCode).to.equal(429);
      expect((await via("198.51.100.1, 203.0.113.2")).statusCode).to.equal(200);
    });

    it("ignores X-Forwarded-For unless a proxy is trusted", async function () {
      limited = await startTestServer({ rateLimit: { perIp: 2, perKey: 1_000, windowMs: 60_000 } });
      const via = (client: string) =>
        limited.app.inject({ method: "GET", url: "/health", remoteAddress: "10.0.4.1", headers: { "x-forwarded-for": client } });
      expect((await via("203.0.113.1")).statusCode).to.equal(200);
      expect((await via("203.0.113.2")).statusCode).to.equal(200);
      expect((await via("203.0.113.3")).statusCode).to.equal(429);
    });
  });

  describe("logs", function () {
    let logged: TestServer;
    afterEach(async function () {
      await logged?.close();
    });

    it("never carry API keys, session tokens or Authorization headers", async function () {
      const lines: string[] = [];
      logged = await startTestServer({ logger: { level: "trace", stream: { write: (line: string) => void lines.push(line) } } });
      const flowL = signInFlow(logged);
      const session = await flowL.signIn(logged.poster);
      const key = await flowL.createKey(bearer(session.token));
      const guessed = `sk_${"Z".repeat(43)}`;
      const bearerGarbage = "SeCrEtBeArErVaLuE0123456789";
      const requests: Array<Record<string, string>> = [
        { "x-api-key": key.key },
        { authorization: `Bearer ${session.token}` },
        { authorization: `Bearer ${key.key}` },
        { "x-api-key": guessed },
        { authorization: `Bearer ${bearerGarbage}` },
        { authorization: `Basic ${bearerGarbage}` },
        { cookie: `session=${bearerGarbage}` },
      ];
      for (const headers of requests) {
        await logged.app.inject({ method: "GET", url: "/api/v1/api-keys/whoami", headers });
        await logged.app.inject({
          method: "POST",
          url: "/api/v1/api-keys",
          headers: { ...headers, "content-type": "application/json" },
          payload: "{bad json",
        });
        await logged.app.inject({ method: "GET", url: "/no/such/route", headers });
      }
      const text = lines.join("");
      expect(text).to.include("incoming request");
      for (const secret of [key.key, key.key.slice(3), session.token, guessed, bearerGarbage]) expect(text).to.not.include(secret);
    });
  });
});

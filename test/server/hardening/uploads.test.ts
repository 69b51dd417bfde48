/**
 * Uploads without quota (docs/security.md, issue 14 item 4): each upload records its account; an account holds at most
 * its quota of bytes no listed task references (413 UPLOAD_QUOTA_EXCEEDED) and uploads at most its bytes per minute
 * (429 RATE_LIMITED with Retry-After); blobs nothing references are collected once their grace period is over.
 */
import { expect } from "chai";
import hre from "hardhat";
import { randomBytes } from "node:crypto";
import { startTestServer, type TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { brief } from "../lifecycle/helpers";
import { DEFAULT_ABUSE, type UploadLimits } from "../../../server/config";
import type { BuiltTask, Uploaded, UploadedBatch } from "@market/core/api";

const KB = 1024;

describe("hardening: uploads with an owner, a quota and collection", function () {
  let s: TestServer | undefined;
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  const boot = async (uploads: Partial<UploadLimits>) => {
    s = await startTestServer({ abuse: { uploads: { ...DEFAULT_ABUSE.uploads, gcIntervalMs: 0, ...uploads } } });
    return s;
  };
  const upload = (server: TestServer, key: string, bytes: Buffer) =>
    server.call<Uploaded>("POST", "/api/v1/storage/upload", { key, body: { data: bytes.toString("base64") } });
  const stored = async (server: TestServer, rootHash: string) => (await server.call("GET", `/api/v1/storage/${rootHash}`)).status === 200;
  const accountOf = async (server: TestServer, wallet: string) =>
    (await server.db.selectFrom("account_wallets").select("account_id").where("address", "=", wallet).executeTakeFirstOrThrow()).account_id;

  it("records the uploader of each blob, per account, once per blob", async function () {
    const server = await boot({});
    const posterKey = await server.apiKeyFor(server.poster);
    const strangerKey = await server.apiKeyFor(server.stranger);
    const bytes = randomBytes(KB);
    const { rootHash } = expectOk(await upload(server, posterKey, bytes));
    expectOk(await upload(server, posterKey, bytes));
    expectOk(await upload(server, strangerKey, bytes));
    const rows = await server.db
      .selectFrom("blob_uploads")
      .select(["account_id", "size"])
      .where("root_hash", "=", rootHash)
      .orderBy("account_id")
      .execute();
    expect(rows).to.deep.equal(
      [
        { account_id: await accountOf(server, server.poster.address), size: KB },
        { account_id: await accountOf(server, server.stranger.address), size: KB },
      ].sort((a, b) => a.account_id - b.account_id),
    );
  });

  it("413 UPLOAD_QUOTA_EXCEEDED past the account's unreferenced bytes; a listing frees its blob's bytes; quotas are per account", async function () {
    const server = await boot({ quotaBytes: 3 * KB });
    const posterKey = await server.apiKeyFor(server.poster);
    const strangerKey = await server.apiKeyFor(server.stranger);
    await server.registerAgent(server.worker);
    const first = randomBytes(KB);
    expectOk(await upload(server, posterKey, first));
    // A private brief of 1.5 KB, its ciphertext uploaded (not listed yet): 2.5 KB held.
    const task = await server.privateTask(brief("Summarise the attached chapter. ".repeat(48)), [server.worker], posterKey);
    const big = randomBytes(1.5 * KB);
    const refused = await upload(server, posterKey, big);
    expectError(refused, "UPLOAD_QUOTA_EXCEEDED", 413);
    expect(refused.body.error.details?.[0]).to.deep.include({ upload: 1.5 * KB, quota: 3 * KB });
    expect(refused.body.error.details?.[0]?.held).to.be.above(2.5 * KB);
    // Nothing was stored or counted for the refused upload.
    const bigHash = hre.ethers.sha256(big);
    expect(await stored(server, bigHash)).to.equal(false);
    expect(await server.db.selectFrom("blob_uploads").select("root_hash").where("root_hash", "=", bigHash).execute()).to.have.length(0);
    // Uploading a blob the account already holds adds nothing.
    expectOk(await upload(server, posterKey, first));
    // Another account has a quota of its own.
    expectOk(await upload(server, strangerKey, big));

    // Listed: the brief's blob is referenced now, its bytes no longer count (1 KB held), and 1.5 KB more fits.
    await server.post(server.poster, posterKey, task.fields);
    expectOk(await upload(server, posterKey, big));
  });

  it("429 RATE_LIMITED with Retry-After past the account's upload bytes per minute, counted per account", async function () {
    const server = await boot({ bytesPerMinute: 2.5 * KB });
    const posterKey = await server.apiKeyFor(server.poster);
    const strangerKey = await server.apiKeyFor(server.stranger);
    expectOk(await upload(server, posterKey, randomBytes(KB)));
    expectOk(await upload(server, posterKey, randomBytes(KB)));
    const limited = await upload(server, posterKey, randomBytes(KB));
    expectError(limited, "RATE_LIMITED", 429);
    expect(Number(limited.headers["retry-after"])).to.be.within(1, 60);
    expectOk(await upload(server, strangerKey, randomBytes(KB)));
    server.advanceClock(61_000);
    expectOk(await upload(server, posterKey, randomBytes(KB)));
  });

  describe("batch uploads (POST /api/v1/storage/upload/batch, issue 30)", function () {
    const uploadBatch = (server: TestServer, key: string | undefined, blobs: Array<Buffer | string>) =>
      server.call<UploadedBatch>("POST", "/api/v1/storage/upload/batch", {
        key,
        body: { blobs: blobs.map((b) => ({ data: typeof b === "string" ? b : b.toString("base64") })) },
      });
    const uploadsOf = async (server: TestServer, hashes: string[]) =>
      server.db.selectFrom("blob_uploads").select("root_hash").where("root_hash", "in", hashes).execute();

    it("stores each blob as a single upload does, answered in order, a repeated blob once", async function () {
      const server = await boot({});
      const posterKey = await server.apiKeyFor(server.poster);
      const [a, b] = [randomBytes(KB), randomBytes(2 * KB)];
      const { blobs } = expectOk(await uploadBatch(server, posterKey, [a, b, a]));
      expect(blobs).to.deep.equal([
        { rootHash: hre.ethers.sha256(a), size: KB },
        { rootHash: hre.ethers.sha256(b), size: 2 * KB },
        { rootHash: hre.ethers.sha256(a), size: KB },
      ]);
      for (const bytes of [a, b]) {
        const read = expectOk(await server.call<{ data: string }>("GET", `/api/v1/storage/${hre.ethers.sha256(bytes)}`));
        expect(Buffer.from(read.data, "base64").equals(bytes)).to.equal(true);
      }
      const rows = await server.db
        .selectFrom("blob_uploads")
        .select(["root_hash", "account_id", "size"])
        .where("root_hash", "in", [hre.ethers.sha256(a), hre.ethers.sha256(b)])
        .execute();
      expect(rows.map((r) => [r.root_hash, r.account_id, r.size]).sort()).to.deep.equal(
        [
          [hre.ethers.sha256(a), await accountOf(server, server.poster.address), KB],
          [hre.ethers.sha256(b), await accountOf(server, server.poster.address), 2 * KB],
        ].sort(),
      );
    });

    it("refuses without a key (401), a bad blob naming its index (INVALID_BASE64, UPLOAD_EMPTY), more than 20 (VALIDATION_FAILED) and more than 10 MB in all (UPLOAD_TOO_LARGE), storing none", async function () {
      const server = await boot({});
      const posterKey = await server.apiKeyFor(server.poster);
      const good = randomBytes(KB);
      expectError(await uploadBatch(server, undefined, [good]), "AUTH_REQUIRED", 401);
      const bad = await uploadBatch(server, posterKey, [good, "not base64!"]);
      expectError(bad, "INVALID_BASE64", 400);
      expect(bad.body.error.details?.[0]).to.deep.include({ index: 1, code: "INVALID_BASE64" });
      const empty = await uploadBatch(server, posterKey, [good, ""]);
      expectError(empty, "UPLOAD_EMPTY");
      expect(empty.body.error.details?.[0]).to.deep.include({ index: 1 });
      expectError(
        await uploadBatch(
          server,
          posterKey,
          Array.from({ length: 21 }, () => randomBytes(8)),
        ),
        "VALIDATION_FAILED",
        400,
      );
      expectError(await uploadBatch(server, posterKey, []), "VALIDATION_FAILED", 400);
      // Each under 10 MB, together over it (and the body still under its limit): refused, neither stored.
      const halves = [randomBytes(5_250_000), randomBytes(5_250_000)];
      expectError(await uploadBatch(server, posterKey, halves), "UPLOAD_TOO_LARGE");
      expect(
        await uploadsOf(
          server,
          halves.map((half) => hre.ethers.sha256(half)),
        ),
      ).to.have.length(0);
      expect(await uploadsOf(server, [hre.ethers.sha256(good)])).to.have.length(0);
      expect(await stored(server, hre.ethers.sha256(good))).to.equal(false);
    });

    it("applies the quota and the rate to the blobs together: a refusal stores none of them", async function () {
      const server = await boot({ quotaBytes: 3 * KB, bytesPerMinute: 4 * KB });
      const posterKey = await server.apiKeyFor(server.poster);
      const [a, b] = [randomBytes(2 * KB), randomBytes(2 * KB)];
      const refused = await uploadBatch(server, posterKey, [a, b]);
      expectError(refused, "UPLOAD_QUOTA_EXCEEDED", 413);
      expect(refused.body.error.details?.[0]).to.deep.include({ upload: 4 * KB, quota: 3 * KB, held: 0 });
      expect(await uploadsOf(server, [hre.ethers.sha256(a), hre.ethers.sha256(b)])).to.have.length(0);
      expect(await stored(server, hre.ethers.sha256(a))).to.equal(false);
      expectOk(await uploadBatch(server, posterKey, [a, randomBytes(KB)]));
      // The rate counts the bytes of the whole batch: blobs the account holds add nothing to its quota, but 2 KB a batch
      // passes 4 KB a minute at the third.
      const strangerKey = await server.apiKeyFor(server.stranger);
      const [x, y] = [randomBytes(KB), randomBytes(KB)];
      expectOk(await uploadBatch(server, strangerKey, [x, y]));
      expectOk(await uploadBatch(server, strangerKey, [x, y]));
      const limited = await uploadBatch(server, strangerKey, [x, y]);
      expectError(limited, "RATE_LIMITED", 429);
      expect(Number(limited.headers["retry-after"])).to.be.within(1, 60);
    });
  });

  it("collects blobs nothing references once the grace period is over; listed and funded ones stay", async function () {
    const server = await boot({ graceMs: 60_000, gcIntervalMs: 20 });
    const posterKey = await server.apiKeyFor(server.poster);
    await server.registerAgent(server.worker);
    const orphan = expectOk(await upload(server, posterKey, randomBytes(KB))).rootHash;
    const refreshed = randomBytes(KB);
    const kept = expectOk(await upload(server, posterKey, refreshed)).rootHash;

    // Listed: referenced by its listing.
    const listedTask = await server.privateTask(brief(), [server.worker], posterKey);
    await server.post(server.poster, posterKey, listedTask.fields);
    // Funded on chain but never listed (a run stopped before listing): its task hash is the blob's hash.
    const fundedTask = await server.privateTask(brief(), [server.worker], posterKey);
    const built = expectOk(
      await server.call<BuiltTask>("POST", "/api/v1/tasks", { key: posterKey, body: { ...fundedTask.fields, amount: "1000000", duration: 86_400 } }),
    );
    await server.sendAll(server.poster, built.transactions);
    await server.sync();

    server.advanceClock(50_000);
    expectOk(await upload(server, posterKey, refreshed));
    server.advanceClock(20_000);
    const deadline = Date.now() + 10_000;
    while ((await stored(server, orphan)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));

    expect(await stored(server, orphan), "the orphan is collected").to.equal(false);
    expect(await server.db.selectFrom("blobs").select("root_hash").where("root_hash", "=", orphan).execute()).to.have.length(0);
    expect(await server.db.selectFrom("blob_uploads").select("root_hash").where("root_hash", "=", orphan).execute()).to.have.length(0);
    expect(await stored(server, kept), "uploaded again within the grace period").to.equal(true);
    expect(await stored(server, listedTask.fields.rootHash), "referenced by a listing").to.equal(true);
    expect(await stored(server, fundedTask.fields.rootHash), "funded on chain").to.equal(true);
  });
});

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
import type { BuiltTask, Uploaded } from "@market/core/api";

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

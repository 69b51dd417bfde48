import { expect } from "chai";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { privateKeyOf, serverFixture, startTestServer, type TestServer } from "./harness";
import { expectError, expectOk } from "./expect";
import { BlocklistToken__factory, TaskEscrow__factory } from "../../typechain-types";
import { encryptBrief, publicKeyFromPrivateKey, publicTaskHash, wrapBriefKey } from "@market/core/crypto";
import type { ErrorCode } from "@market/core/errors";
import type { BuiltTask } from "@market/core/api";

const ZERO_HASH = `0x${"0".repeat(64)}`;
const escrowInterface = TaskEscrow__factory.createInterface();

type Plan = BuiltTask;

/** The worker registered with two tags, the poster's API key; a second chain (base) the service does not post on. */
const postingServer = serverFixture(
  async (s) => {
    await s.registerAgent(s.worker, ["web_research", "summarization"]);
    return { posterKey: await s.apiKeyFor(s.poster) };
  },
  { extraChains: [{ name: "base", postable: false }] },
);

describe("posting: build, upload and list", function () {
  let s: TestServer;
  let posterKey: string;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { posterKey },
    } = await postingServer());
  });
  afterEach(async function () {
    await s.close();
  });

  /** `key` null sends no credential. */
  const build = (body: Record<string, unknown>, key: string | null = posterKey) =>
    s.call<Plan>("POST", "/api/v1/tasks", { key: key ?? undefined, body: { amount: "5000000", duration: 86_400, ...body } });
  const list = (body: Record<string, unknown>, key: string | null = posterKey) =>
    s.call<{ taskHash: string; status: string }>("POST", "/api/v1/a2a/tasks/index", { key: key ?? undefined, body });
  const brief = "Write a two-paragraph summary of the history of the printing press.";

  describe("POST /api/v1/tasks", function () {
    it("answers the createTask call and the approval for the key's wallet", async function () {
      const plan = expectOk(await build(s.publicTask(brief)));
      expect(plan.taskHash).to.equal(publicTaskHash(brief));
      expect(plan.unsignedTx).to.include({ to: s.escrowAddress, from: s.poster.address, value: "0" });
      expect(plan.unsignedTx.chainId).to.equal(31337);
      const call = escrowInterface.parseTransaction({ data: plan.unsignedTx.data });
      expect(call?.name).to.equal("createTask");
      expect(call?.args.map(String)).to.deep.equal([publicTaskHash(brief), s.token, "5000000", "86400", hre.ethers.ZeroAddress]);
      // The fixture approved the escrow for the maximum already: no approval needed.
      expect(plan.approveTx).to.equal(null);
      expect(plan.transactions).to.have.length(1);
    });

    it("adds the approval when the allowance is short", async function () {
      await s.usdc.connect(s.poster).approve(s.escrowAddress, 1n);
      const plan = expectOk(await build(s.publicTask(brief)));
      expect(plan.approveTx).to.include({ to: s.token });
      const approval = s.usdc.interface.parseTransaction({ data: plan.approveTx!.data });
      expect(approval?.name).to.equal("approve");
      expect(approval?.args.map(String)).to.deep.equal([s.escrowAddress, "5000000"]);
      expect(plan.transactions.map((t) => t.to)).to.deep.equal([s.token, s.escrowAddress]);
    });

    it("names the per-task verifier of agent mode in the call", async function () {
      const plan = expectOk(await build(s.publicTask(brief, { verificationMode: "agent", verifierAddress: s.agentVerifier.address })));
      const call = escrowInterface.parseTransaction({ data: plan.unsignedTx.data });
      expect(call?.args[4]).to.equal(s.agentVerifier.address);
    });

    const refusals: Array<[string, () => Record<string, unknown>, ErrorCode]> = [
      ["a zero task hash", () => ({ ...s.publicTask(brief), taskHash: ZERO_HASH }), "INVALID_TASK_HASH"],
      ["a token other than the settlement token", () => s.publicTask(brief, { token: s.stranger.address }), "TOKEN_NOT_SETTLEMENT"],
      ["amount 0", () => ({ ...s.publicTask(brief), amount: "0" }), "INVALID_AMOUNT"],
      ["a negative amount", () => ({ ...s.publicTask(brief), amount: "-5" }), "INVALID_AMOUNT"],
      ["a decimal amount", () => ({ ...s.publicTask(brief), amount: "1.5" }), "INVALID_AMOUNT"],
      ["an amount above 2^256-1", () => ({ ...s.publicTask(brief), amount: (1n << 256n).toString() }), "INVALID_AMOUNT"],
      ["an amount above what the escrow holds", () => ({ ...s.publicTask(brief), amount: (1n << 96n).toString() }), "INVALID_AMOUNT"],
      ["a duration under an hour", () => ({ ...s.publicTask(brief), duration: 3599 }), "INVALID_DURATION"],
      ["a duration over 90 days", () => ({ ...s.publicTask(brief), duration: "7776001" }), "INVALID_DURATION"],
      ["a duration that is not a number", () => ({ ...s.publicTask(brief), duration: "1 day" }), "INVALID_DURATION"],
      ["oracle verification", () => s.publicTask(brief, { verificationMode: "oracle" }), "UNSUPPORTED_VERIFICATION_MODE"],
      ["auto mode without criteria", () => s.publicTask(brief, { verificationCriteria: undefined }), "INVALID_CRITERIA"],
      ["auto mode with only a pass threshold", () => s.publicTask(brief, { verificationCriteria: { pass_threshold: 50 } }), "INVALID_CRITERIA"],
      ["a regex that does not compile", () => s.publicTask(brief, { verificationCriteria: { regex_pattern: "(unclosed" } }), "INVALID_CRITERIA"],
      ["a catastrophic regex", () => s.publicTask(brief, { verificationCriteria: { regex_pattern: "^(a+)+$" } }), "INVALID_CRITERIA"],
      ["agent mode without a verifier", () => s.publicTask(brief, { verificationMode: "agent" }), "VERIFIER_REQUIRED"],
      ["the poster as verifier", () => s.publicTask(brief, { verificationMode: "agent", verifierAddress: s.poster.address }), "VERIFIER_NOT_ALLOWED"],
      [
        "the pinned executor as verifier",
        () => s.publicTask(brief, { verificationMode: "agent", verifierAddress: s.worker.address, targetExecutor: s.worker.address }),
        "VERIFIER_NOT_ALLOWED",
      ],
      // Funded, the zero address reads as "no verifier" and the listing would be refused after payment.
      [
        "a zero verifier address",
        () => s.publicTask(brief, { verificationMode: "agent", verifierAddress: hre.ethers.ZeroAddress }),
        "INVALID_ADDRESS",
      ],
      ["a task pinned to the zero address", () => s.publicTask(brief, { targetExecutor: hre.ethers.ZeroAddress }), "INVALID_ADDRESS"],
      [
        "a verifier outside agent mode",
        () => s.publicTask(brief, { verificationMode: "manual", verifierAddress: s.agentVerifier.address }),
        "VERIFIER_MODE_MISMATCH",
      ],
      ["a public task with wrapped keys", () => s.publicTask(brief, { wrappedKeys: { [s.worker.address]: "ab" } }), "PUBLIC_TASK_KEYS"],
      ["a public task with a custody blob", () => s.publicTask(brief, { keyCustodyBlob: "ab" }), "PUBLIC_TASK_KEYS"],
      ["a public task without its brief", () => s.publicTask(brief, { publicBrief: undefined }), "PUBLIC_BRIEF_REQUIRED"],
      ["a public task whose hash is not the brief's", () => ({ ...s.publicTask(brief), taskHash: publicTaskHash("other") }), "TASK_HASH_MISMATCH"],
      ["a task pinned to its poster", () => s.publicTask(brief, { targetExecutor: s.poster.address }), "TARGET_IS_POSTER"],
      ["a task pinned to an unregistered agent", () => s.publicTask(brief, { targetExecutor: s.stranger.address }), "TARGET_CHAIN_UNSUPPORTED"],
      ["a service without a target", () => s.publicTask(brief, { serviceId: 1 }), "SERVICE_REQUIRES_TARGET"],
      ["an unknown service", () => s.publicTask(brief, { serviceId: 1, targetExecutor: s.worker.address }), "SERVICE_NOT_FOUND"],
      ["a malformed capability tag", () => s.publicTask(brief, { requiredCapabilities: ["tele pathy"] }), "VALIDATION_FAILED"],
      ["a zone over 128 characters", () => s.publicTask(brief, { locationZone: "z".repeat(129) }), "VALIDATION_FAILED"],
      ["an unknown field", () => s.publicTask(brief, { colour: "blue" }), "VALIDATION_FAILED"],
      ["a chain where tasks are not posted", () => s.publicTask(brief, { chain: "base" }), "CHAIN_NOT_POSTABLE"],
      ["a chain that is not configured", () => s.publicTask(brief, { chain: "0g" }), "CHAIN_NOT_CONFIGURED"],
    ];
    for (const [what, body, code] of refusals) {
      it(`refuses ${what} with ${code}`, async function () {
        expectError(await build(body()), code);
      });
    }

    it("refuses a caller without a key (AUTH_REQUIRED)", async function () {
      expectError(await build(s.publicTask(brief), null), "AUTH_REQUIRED");
      expectError(await list({ ...s.publicTask(brief), txHash: hre.ethers.id("x") }, null), "AUTH_REQUIRED");
    });

    it("refuses a task pinned to an agent whose minReward is above the amount (BELOW_MIN_REWARD), before anything is paid", async function () {
      await s.registerAgent(s.stranger, [], { minReward: "5000001" });
      expectError(await build(s.publicTask(brief, { targetExecutor: s.stranger.address })), "BELOW_MIN_REWARD");
      expectOk(await build({ ...s.publicTask(brief, { targetExecutor: s.stranger.address }), amount: "5000001" }));
    });

    it("refuses a pinned agent registered only for another chain (TARGET_CHAIN_UNSUPPORTED)", async function () {
      await s.registerAgent(s.stranger, [], { supportedChains: ["base"] });
      expectError(await build(s.publicTask(brief, { targetExecutor: s.stranger.address })), "TARGET_CHAIN_UNSUPPORTED");
    });

    describe("private tasks", function () {
      it("accepts a brief wrapped to a registered agent", async function () {
        const { fields } = await s.privateTask(brief, [s.worker], posterKey);
        expectOk(await build(fields));
      });

      it("refuses a private task without rootHash (VALIDATION_FAILED naming it)", async function () {
        const { fields } = await s.privateTask(brief, [s.worker], posterKey);
        const answer = await build({ ...fields, rootHash: undefined });
        expectError(answer, "VALIDATION_FAILED");
        expect(answer.body.error.details?.[0]?.field).to.equal("body.rootHash");
      });

      it("refuses a rootHash nobody uploaded (BLOB_NOT_FOUND)", async function () {
        const { fields } = await s.privateTask(brief, [s.worker], posterKey);
        expectError(await build({ ...fields, rootHash: publicTaskHash("never uploaded") }), "BLOB_NOT_FOUND");
      });

      it("refuses a hash that is not the ciphertext's (TASK_HASH_MISMATCH)", async function () {
        const { fields } = await s.privateTask(brief, [s.worker], posterKey);
        expectError(await build({ ...fields, taskHash: publicTaskHash("x") }), "TASK_HASH_MISMATCH");
      });

      it("refuses a public brief on a private task (PUBLIC_BRIEF_REQUIRED)", async function () {
        const { fields } = await s.privateTask(brief, [s.worker], posterKey);
        expectError(await build({ ...fields, publicBrief: brief }), "PUBLIC_BRIEF_REQUIRED");
      });

      it("refuses a brief no registered agent can open (NO_EXECUTORS)", async function () {
        const { fields } = await s.privateTask(brief, [s.stranger], posterKey);
        expectError(await build(fields), "NO_EXECUTORS");
      });

      it("refuses a brief wrapped only to agents lacking a required capability (NO_EXECUTORS)", async function () {
        const { fields } = await s.privateTask(brief, [s.worker], posterKey, { requiredCapabilities: ["translation"] });
        expectError(await build(fields), "NO_EXECUTORS");
      });

      it("refuses agent mode when the key is not wrapped to the verifier (VERIFIER_KEY_MISSING)", async function () {
        const { fields } = await s.privateTask(brief, [s.worker], posterKey, {
          verificationMode: "agent",
          verifierAddress: s.agentVerifier.address,
        });
        expectError(await build(fields), "VERIFIER_KEY_MISSING");
      });

      it("refuses agent mode without the verifier's wrap even with a custody copy (VERIFIER_KEY_MISSING): the verifier never accepts", async function () {
        const { fields, aesKey } = await s.privateTask(brief, [s.worker], posterKey, {
          verificationMode: "agent",
          verifierAddress: s.agentVerifier.address,
        });
        const custodyCopy = wrapBriefKey(aesKey, publicKeyFromPrivateKey(hre.ethers.Wallet.createRandom().privateKey));
        expectError(await build({ ...fields, keyCustodyBlob: custodyCopy }), "VERIFIER_KEY_MISSING");
      });

      it("a custody copy this service cannot open does not stand in for wraps (NO_EXECUTORS): no custody key, or junk", async function () {
        const { fields, aesKey } = await s.privateTask(brief, [], posterKey);
        const custodyCopy = wrapBriefKey(aesKey, publicKeyFromPrivateKey(hre.ethers.Wallet.createRandom().privateKey));
        expectError(await build({ ...fields, keyCustodyBlob: custodyCopy }), "NO_EXECUTORS");
        expectError(await build({ ...fields, keyCustodyBlob: "00" }), "NO_EXECUTORS");
      });
    });

    it("refuses a hash already listed (TASK_HASH_IN_USE), including a public brief anyone listed", async function () {
      await s.post(s.poster, posterKey, s.publicTask(brief));
      expectError(await build(s.publicTask(brief)), "TASK_HASH_IN_USE");
      const otherKey = await s.apiKeyFor(s.stranger);
      expectError(await build(s.publicTask(brief), otherKey), "TASK_HASH_IN_USE");
    });

    it("refuses a hash another wallet funded (TASK_HASH_CLAIMED) and one the caller funded unlisted (TASK_HASH_IN_USE)", async function () {
      const hash = publicTaskHash(brief);
      await s.usdc.mint(s.stranger.address, 10_000_000n);
      await s.usdc.connect(s.stranger).approve(s.escrowAddress, 10_000_000n);
      await s.escrow.connect(s.stranger).createTask(hash, s.token, 5_000_000n, 86_400n, hre.ethers.ZeroAddress);
      expectError(await build(s.publicTask(brief)), "TASK_HASH_CLAIMED");
      const strangerKey = await s.apiKeyFor(s.stranger);
      expectError(await build(s.publicTask(brief), strangerKey), "TASK_HASH_IN_USE");
    });
  });

  describe("POST /api/v1/tasks/batch", function () {
    const briefs = (n: number) => Array.from({ length: n }, (_, i) => `Batch brief number ${i}: describe a prime number.`);

    it("builds one createTasks call and one approval of the total", async function () {
      await s.usdc.connect(s.poster).approve(s.escrowAddress, 0n);
      const tasks = briefs(3).map((b) => ({ ...s.publicTask(b), amount: "1000000", duration: 3600 }));
      const plan = expectOk(
        await s.call<Plan & { taskHashes: string[]; total: string }>("POST", "/api/v1/tasks/batch", { key: posterKey, body: { tasks } }),
      );
      expect(plan.total).to.equal("3000000");
      const call = escrowInterface.parseTransaction({ data: plan.unsignedTx.data });
      expect(call?.name).to.equal("createTasks");
      expect(call?.args[0]).to.have.length(3);
      expect(plan.taskHashes).to.deep.equal(briefs(3).map(publicTaskHash));
      const approval = s.usdc.interface.parseTransaction({ data: plan.approveTx!.data });
      expect(approval?.args[1]).to.equal(3_000_000n);
    });

    it("refuses more than 20 tasks (BATCH_TOO_LARGE)", async function () {
      const tasks = briefs(21).map((b) => ({ ...s.publicTask(b), amount: "1000000", duration: 3600 }));
      expectError(await s.call("POST", "/api/v1/tasks/batch", { key: posterKey, body: { tasks } }), "BATCH_TOO_LARGE");
    });

    it("refuses a batch when the chain's escrow has no batch creation (BATCH_UNSUPPORTED)", async function () {
      // A contract without maxBatch() (here the token) answers the call with a revert, as the deployed arc escrow does.
      const token = s.token;
      await s.close();
      s = await startTestServer({ arc: { escrow: token } });
      const key = await s.apiKeyFor(s.poster);
      const tasks = briefs(2).map((b) => ({ ...s.publicTask(b), amount: "1000000", duration: 3600 }));
      expectError(await s.call("POST", "/api/v1/tasks/batch", { key, body: { tasks } }), "BATCH_UNSUPPORTED");
    });

    it("names each task of an approved batch funded on chain (TASK_HASH_CLAIMED, TASK_HASH_IN_USE), and builds a batch with none", async function () {
      // Approved for the whole batch: the batch's createTasks runs as an eth_call when no hash is funded (one call),
      // and is refused when one is, when each task is read on its own.
      await s.usdc.mint(s.poster.address, 100_000_000n);
      await s.usdc.connect(s.poster).approve(s.escrowAddress, 100_000_000n);
      const [mine, theirs, free] = ["approved batch: mine", "approved batch: theirs", "approved batch: free"];
      await s.usdc.mint(s.stranger.address, 10_000_000n);
      await s.usdc.connect(s.stranger).approve(s.escrowAddress, 10_000_000n);
      await s.escrow.connect(s.stranger).createTask(publicTaskHash(theirs), s.token, 1_000_000n, 86_400n, hre.ethers.ZeroAddress);
      await s.escrow.connect(s.poster).createTask(publicTaskHash(mine), s.token, 1_000_000n, 86_400n, hre.ethers.ZeroAddress);
      const task = (b: string) => ({ ...s.publicTask(b), amount: "1000000", duration: 3600 });
      const answer = await s.call("POST", "/api/v1/tasks/batch", { key: posterKey, body: { tasks: [task(free), task(mine), task(theirs)] } });
      expectError(answer, "INVALID_ROWS");
      expect(answer.body.error.details?.map((d) => [d.index, d.code])).to.deep.equal([
        [1, "TASK_HASH_IN_USE"],
        [2, "TASK_HASH_CLAIMED"],
      ]);
      const built = expectOk(
        await s.call<{ taskHashes: string[]; approveTx: unknown }>("POST", "/api/v1/tasks/batch", {
          key: posterKey,
          body: { tasks: [task(free), task("approved batch: another")] },
        }),
      );
      expect(built.taskHashes).to.deep.equal([publicTaskHash(free), publicTaskHash("approved batch: another")]);
      expect(built.approveTx).to.equal(null);
    });

    it("refuses the whole batch naming each bad task (INVALID_ROWS), duplicates included", async function () {
      const good = { ...s.publicTask("fine brief"), amount: "1000000", duration: 3600 };
      const tasks = [good, { ...good }, { ...s.publicTask("bad duration"), amount: "1", duration: 5 }];
      const answer = await s.call("POST", "/api/v1/tasks/batch", { key: posterKey, body: { tasks } });
      expectError(answer, "INVALID_ROWS");
      expect(answer.body.error.details?.map((d) => [d.index, d.code])).to.deep.equal([
        [1, "DUPLICATE_TASK_HASH"],
        [2, "INVALID_DURATION"],
      ]);
    });
  });

  describe("POST /api/v1/a2a/tasks/index", function () {
    async function fund(fields: Record<string, unknown>, signer = s.poster, key = posterKey) {
      const plan = expectOk(await build(fields, key));
      return s.sendAll(signer, plan.transactions);
    }

    it("lists a funded task once; listing again the same way is a no-op", async function () {
      const fields = s.publicTask(brief, { routingSummary: "history, summary" });
      const txHash = await fund(fields);
      expect(expectOk(await list({ ...fields, txHash }))).to.deep.equal({ taskHash: publicTaskHash(brief), status: "listed" });
      expect(expectOk(await list({ ...fields, txHash }))).to.deep.equal({ taskHash: publicTaskHash(brief), status: "already_listed" });
    });

    it("refuses different properties after the first listing (LISTING_IMMUTABLE, PRIVACY_IMMUTABLE)", async function () {
      const fields = s.publicTask(brief, { routingSummary: "first" });
      const txHash = await fund(fields);
      expectOk(await list({ ...fields, txHash }));
      const changed = await list({ ...fields, routingSummary: "second", txHash });
      expectError(changed, "LISTING_IMMUTABLE");
      expect(changed.body.error.details?.[0]?.field).to.equal("body.routingSummary");
      // The brief's own bytes uploaded as a "ciphertext" make a private listing of the same hash pass every other rule.
      await s.call("POST", "/api/v1/storage/upload", { key: posterKey, body: { data: Buffer.from(brief).toString("base64") } });
      const asPrivate = {
        taskHash: publicTaskHash(brief),
        privacy: "private",
        rootHash: publicTaskHash(brief),
        wrappedKeys: { [s.worker.address]: "00" },
        verificationMode: "auto",
        verificationCriteria: { min_length: 10 },
        routingSummary: "first",
      };
      expectError(await list({ ...asPrivate, txHash }), "PRIVACY_IMMUTABLE");
    });

    it("refuses a receipt nobody mined (TX_NOT_FOUND)", async function () {
      expectError(await list({ ...s.publicTask(brief), txHash: hre.ethers.id("no such tx") }), "TX_NOT_FOUND");
    });

    it("refuses a reverted funding (TX_REVERTED)", async function () {
      const fields = s.publicTask(brief);
      const data = escrowInterface.encodeFunctionData("createTask", [fields.taskHash, s.token, 0n, 86_400n, hre.ethers.ZeroAddress]);
      // Mined without automine, so the node records the failure instead of refusing the transaction.
      await hre.network.provider.send("evm_setAutomine", [false]);
      const tx = await s.poster.sendTransaction({ to: s.escrowAddress, data, gasLimit: 200_000n });
      await hre.network.provider.send("hardhat_mine", ["0x1"]);
      await hre.network.provider.send("evm_setAutomine", [true]);
      expect((await hre.ethers.provider.getTransactionReceipt(tx.hash))?.status).to.equal(0);
      expectError(await list({ ...fields, txHash: tx.hash }), "TX_REVERTED");
    });

    it("refuses a funding sent by another wallet (NOT_TASK_AGENT)", async function () {
      const fields = s.publicTask(brief);
      await s.usdc.mint(s.stranger.address, 10_000_000n);
      await s.usdc.connect(s.stranger).approve(s.escrowAddress, 10_000_000n);
      const tx = await s.escrow.connect(s.stranger).createTask(fields.taskHash, s.token, 5_000_000n, 86_400n, hre.ethers.ZeroAddress);
      expectError(await list({ ...fields, txHash: tx.hash }), "NOT_TASK_AGENT", 403);
    });

    it("refuses a receipt without the task's TaskCreated (NOT_IN_RECEIPT)", async function () {
      const tx = await s.usdc.connect(s.poster).approve(s.escrowAddress, 123n);
      expectError(await list({ ...s.publicTask(brief), txHash: tx.hash }), "NOT_IN_RECEIPT");
    });

    it("refuses a task funded in another allowed token (TOKEN_NOT_SETTLEMENT)", async function () {
      const other = await new BlocklistToken__factory(s.admin).deploy();
      await s.escrow.connect(s.admin).setAllowedToken(await other.getAddress(), true);
      await other.mint(s.poster.address, 10_000_000n);
      await other.connect(s.poster).approve(s.escrowAddress, 10_000_000n);
      const fields = s.publicTask(brief);
      const tx = await s.escrow.connect(s.poster).createTask(fields.taskHash, await other.getAddress(), 5_000_000n, 86_400n, hre.ethers.ZeroAddress);
      expectError(await list({ ...fields, txHash: tx.hash }), "TOKEN_NOT_SETTLEMENT");
    });

    it("refuses a mode that contradicts the escrow's verifier (VERIFIER_MODE_MISMATCH)", async function () {
      const fields = s.publicTask(brief);
      const tx = await s.escrow.connect(s.poster).createTask(fields.taskHash, s.token, 5_000_000n, 86_400n, s.agentVerifier.address);
      expectError(await list({ ...fields, txHash: tx.hash }), "VERIFIER_MODE_MISMATCH");
      expectOk(await list({ ...fields, verificationMode: "agent", verifierAddress: s.agentVerifier.address, txHash: tx.hash }));
    });

    it("refuses a task cancelled before listing (NOT_OPEN)", async function () {
      const fields = s.publicTask(brief);
      const txHash = await fund(fields);
      await s.escrow.connect(s.poster).cancelTask(fields.taskHash);
      expectError(await list({ ...fields, txHash }), "NOT_OPEN");
    });

    it("refuses a pinned agent that left the chain after funding (TARGET_CHAIN_UNSUPPORTED)", async function () {
      const fields = s.publicTask(brief, { targetExecutor: s.worker.address });
      const txHash = await fund(fields);
      const workerKey = await s.apiKeyFor(s.worker);
      expectOk(await s.call("POST", "/api/v1/a2a/register", { key: workerKey, body: { supportedChains: ["base"] } }));
      expectError(await list({ ...fields, txHash }), "TARGET_CHAIN_UNSUPPORTED");
    });

    it("lists every task of a batch receipt, reporting each item in details when one fails", async function () {
      const briefs = ["batch one: name a river", "batch two: name a mountain", "batch three: name a lake"];
      const tasks = briefs.map((b) => ({ ...s.publicTask(b), amount: "1000000", duration: 3600 }));
      const plan = expectOk(await s.call<Plan>("POST", "/api/v1/tasks/batch", { key: posterKey, body: { tasks: tasks.slice(0, 2) } }));
      const txHash = await s.sendAll(s.poster, plan.transactions);
      const items = tasks.map(({ amount: _a, duration: _d, ...fields }) => fields);
      const answer = await list({ txHash, tasks: [items[0], items[1], items[2], items[0]] });
      expectError(answer, "INDEX_FAILED");
      expect(answer.body.error.details?.map((d) => [d.taskHash, d.status, d.code ?? null])).to.deep.equal([
        [publicTaskHash(briefs[0]!), "listed", null],
        [publicTaskHash(briefs[1]!), "listed", null],
        [publicTaskHash(briefs[2]!), "failed", "NOT_IN_RECEIPT"],
        [publicTaskHash(briefs[0]!), "failed", "DUPLICATE_TASK_HASH"],
      ]);
      // The listed items stay listed; listing them again reports already_listed.
      const again = expectOk(await list({ txHash, tasks: [items[0], items[1]] }));
      expect(again).to.deep.equal({
        results: [
          { taskHash: publicTaskHash(briefs[0]!), status: "already_listed" },
          { taskHash: publicTaskHash(briefs[1]!), status: "already_listed" },
        ],
      });
    });

    it("lists a batch receipt sent twice at once: each task listed once, by one answer, already_listed in the other", async function () {
      // Both requests read no listing, then one writes the batch first: the other's one transaction for the batch
      // fails on a task listed meanwhile and writes each task on its own, each answering already_listed.
      const briefs = ["twice one: name a river", "twice two: name a mountain", "twice three: name a lake"];
      const tasks = briefs.map((b) => ({ ...s.publicTask(b), amount: "1000000", duration: 3600 }));
      const plan = expectOk(await s.call<Plan>("POST", "/api/v1/tasks/batch", { key: posterKey, body: { tasks } }));
      const txHash = await s.sendAll(s.poster, plan.transactions);
      const items = tasks.map(({ amount: _a, duration: _d, ...fields }) => fields);
      const answers = (await Promise.all([list({ txHash, tasks: items }), list({ txHash, tasks: items })])).map(
        (answer) => expectOk(answer) as unknown as { results: Array<{ taskHash: string; status: string }> },
      );
      for (const [i, brief] of briefs.entries()) {
        const statuses = answers.map((a) => a.results[i]!);
        expect(statuses.map((r) => r.taskHash)).to.deep.equal([publicTaskHash(brief), publicTaskHash(brief)]);
        expect(statuses.map((r) => r.status).sort()).to.deep.equal(["already_listed", "listed"]);
      }
      const hashes = briefs.map((b) => publicTaskHash(b));
      expect(await s.db.selectFrom("listings").select("task_hash").where("task_hash", "in", hashes).execute()).to.have.length(3);
    });

    describe("a batch receipt's tasks as they stand on chain (one log query, then a read of each task touched since)", function () {
      const briefs = ["open one: name a river", "open two: name a mountain", "open three: name a lake"];
      /** Funds the briefs in one createTasks of `duration` seconds; the listing items and the receipt. */
      async function fundBatch(duration = 3600) {
        const tasks = briefs.map((b) => ({ ...s.publicTask(b), amount: "1000000", duration }));
        const plan = expectOk(await s.call<Plan>("POST", "/api/v1/tasks/batch", { key: posterKey, body: { tasks } }));
        const txHash = await s.sendAll(s.poster, plan.transactions);
        return { txHash, items: tasks.map(({ amount: _a, duration: _d, ...fields }) => fields) };
      }
      const outcomes = (answer: Awaited<ReturnType<typeof list>>) => answer.body.error.details?.map((d) => [d.taskHash, d.status, d.code ?? null]);

      it("refuses only the task cancelled or assigned after the funding, in the same block or later (NOT_OPEN)", async function () {
        const { txHash, items } = await fundBatch();
        await s.escrow.connect(s.poster).cancelTask(items[0]!.taskHash);
        await s.escrow.connect(s.poster).assignWorker(items[2]!.taskHash, s.worker.address);
        const answer = await list({ txHash, tasks: items });
        expectError(answer, "INDEX_FAILED");
        expect(outcomes(answer)).to.deep.equal([
          [items[0]!.taskHash, "failed", "NOT_OPEN"],
          [items[1]!.taskHash, "listed", null],
          [items[2]!.taskHash, "failed", "NOT_OPEN"],
        ]);
      });

      it("refuses tasks past their deadline (NOT_OPEN), untouched since the funding", async function () {
        const { txHash, items } = await fundBatch();
        await time.increase(3601);
        await s.sync();
        const answer = await list({ txHash, tasks: items });
        expectError(answer, "INDEX_FAILED");
        expect(outcomes(answer)?.map((o) => o[2])).to.deep.equal(["NOT_OPEN", "NOT_OPEN", "NOT_OPEN"]);
      });

      it("lists tasks past the deadline they were funded with when a pause of the escrow since moved it later", async function () {
        const { txHash, items } = await fundBatch();
        await s.escrow.connect(s.admin).pause();
        await time.increase(7200);
        await s.escrow.connect(s.admin).unpause();
        await s.sync();
        // Past the funded deadline (the API's clock follows the chain's), within the one the pause moved.
        const answer = await list({ txHash, tasks: items });
        expect(expectOk(answer)).to.deep.equal({ results: items.map((i) => ({ taskHash: i.taskHash, status: "listed" })) });
      });
    });

    it("keeps a private task's wrapped keys for the agents it names", async function () {
      const { fields } = await s.privateTask(brief, [s.worker], posterKey);
      const txHash = await fund(fields);
      expectOk(await list({ ...fields, txHash }));
      const keys = await s.db.selectFrom("task_keys").selectAll().execute();
      expect(keys.map((k) => k.agent_address)).to.deep.equal([s.worker.address]);
    });

    it("listing again the same way stays a no-op after keys were added for more agents", async function () {
      await s.registerAgent(s.stranger, ["web_research"]);
      const { fields, aesKey } = await s.privateTask(brief, [s.worker], posterKey);
      const txHash = await fund(fields);
      expectOk(await list({ ...fields, txHash }));
      await s.sync();
      const added = { [s.stranger.address]: wrapBriefKey(aesKey, publicKeyFromPrivateKey(privateKeyOf(s.stranger))) };
      expectOk(await s.call("POST", `/api/v1/a2a/tasks/${fields.taskHash}/keys`, { key: posterKey, body: { wrappedKeys: added } }));

      expect(expectOk(await list({ ...fields, txHash })).status).to.equal("already_listed");
      // Keys are compared with the stored ones for the agents the request names: another key for an agent, or a key
      // for an agent nothing was wrapped to, is a change.
      const otherKey = wrapBriefKey(aesKey, publicKeyFromPrivateKey(privateKeyOf(s.worker)));
      for (const wrappedKeys of [{ [s.worker.address]: otherKey }, { ...fields.wrappedKeys, [s.poster.address]: otherKey }]) {
        const changed = await list({ ...fields, wrappedKeys, txHash });
        expectError(changed, "LISTING_IMMUTABLE");
        expect(changed.body.error.details?.[0]?.field).to.equal("body.wrappedKeys");
      }
    });
  });

  describe("reads", function () {
    it("browses only tasks whose required capabilities the caller holds, at most the first 4,000 characters", async function () {
      const long = `${"x".repeat(4100)} long brief`;
      const open = await s.post(s.poster, posterKey, s.publicTask(long));
      const needsBoth = await s.post(
        s.poster,
        posterKey,
        s.publicTask("needs two tags", { requiredCapabilities: ["web_research", "summarization"] }),
      );
      const needsOne = await s.post(s.poster, posterKey, s.publicTask("needs one tag", { requiredCapabilities: ["web_research"] }));
      type Browse = { tasks: Array<{ meta: { publicBrief: string; publicBriefTruncated: boolean }; state: { taskId: string } }>; total: number };
      const ids = async (query: string) => expectOk(await s.call<Browse>("GET", `/api/v1/a2a/tasks${query}`)).tasks.map((t) => t.state.taskId);
      expect(await ids("")).to.have.members([open.taskHash]);
      expect(await ids("?capabilities=web_research")).to.have.members([open.taskHash, needsOne.taskHash]);
      expect(await ids("?capabilities=web_research,summarization")).to.have.members([open.taskHash, needsOne.taskHash, needsBoth.taskHash]);
      const page = expectOk(await s.call<Browse>("GET", "/api/v1/a2a/tasks"));
      expect(page.total).to.equal(1);
      expect(page.tasks[0]!.meta.publicBrief).to.have.length(4000);
      expect(page.tasks[0]!.meta.publicBriefTruncated).to.equal(true);
      expectError(await s.call("GET", "/api/v1/a2a/tasks?capabilities=tele%20pathy"), "VALIDATION_FAILED");
    });

    it("shows a pinned task only to its agent, and no task past its deadline or cancelled", async function () {
      const workerKey = await s.apiKeyFor(s.worker, "worker reads");
      const pinned = await s.post(s.poster, posterKey, s.publicTask("pinned to the worker", { targetExecutor: s.worker.address }));
      const cancelled = await s.post(s.poster, posterKey, s.publicTask("cancelled soon"));
      const short = await s.post(s.poster, posterKey, s.publicTask("expires in an hour"), 1_000_000n, 3600);
      await s.escrow.connect(s.poster).cancelTask(cancelled.taskHash);
      await s.sync();
      type Browse = { tasks: Array<{ state: { taskId: string } }> };
      const ids = async (key?: string) => expectOk(await s.call<Browse>("GET", "/api/v1/a2a/tasks", { key })).tasks.map((t) => t.state.taskId);
      expect(await ids(workerKey)).to.have.members([pinned.taskHash, short.taskHash]);
      expect(await ids(posterKey)).to.have.members([short.taskHash]);
      await time.increase(3600);
      await s.sync();
      expect(await ids(workerKey)).to.have.members([pinned.taskHash]);
      const expired = expectOk(await s.call<{ state: { status: string } }>("GET", `/api/v1/tasks/${short.taskHash}`));
      expect(expired.state.status).to.equal("expired");
    });

    it("answers at most 100 tasks per browse, with the full count", async function () {
      // 105 tasks in 6 batch fundings, listed by batch.
      const all = Array.from({ length: 105 }, (_, i) => s.publicTask(`bulk brief ${i}`));
      for (let i = 0; i < all.length; i += 20) {
        const chunk = all.slice(i, i + 20);
        const plan = expectOk(
          await s.call<Plan>("POST", "/api/v1/tasks/batch", {
            key: posterKey,
            body: { tasks: chunk.map((t) => ({ ...t, amount: "1000", duration: 3600 })) },
          }),
        );
        const txHash = await s.sendAll(s.poster, plan.transactions);
        expectOk(await list({ txHash, tasks: chunk }));
      }
      await s.sync();
      const page = expectOk(await s.call<{ tasks: unknown[]; total: number }>("GET", "/api/v1/a2a/tasks"));
      expect(page.tasks).to.have.length(100);
      expect(page.total).to.equal(105);

      type Posted = { tasks: Array<{ state: { taskId: string; status: string } }>; nextCursor: string | null };
      const first = expectOk(await s.call<Posted>("GET", "/api/v1/a2a/tasks/posted?limit=60", { key: posterKey }));
      expect(first.tasks).to.have.length(60);
      const second = expectOk(await s.call<Posted>("GET", `/api/v1/a2a/tasks/posted?limit=60&cursor=${first.nextCursor}`, { key: posterKey }));
      expect(second.tasks).to.have.length(45);
      expect(second.nextCursor).to.equal(null);
      const seen = new Set([...first.tasks, ...second.tasks].map((t) => t.state.taskId));
      expect(seen.size).to.equal(105);
      expect([...first.tasks, ...second.tasks].every((t) => t.state.status === "open")).to.equal(true);
    });

    it("shows the poster's own tasks with their state, and one task by hash", async function () {
      const posted = await s.post(s.poster, posterKey, s.publicTask(brief));
      const mine = expectOk(
        await s.call<{ tasks: Array<{ meta: { poster: string; reward: { amount: string; unit: { symbol: string } } }; state: { status: string } }> }>(
          "GET",
          "/api/v1/a2a/tasks/posted",
          { key: posterKey },
        ),
      );
      expect(mine.tasks).to.have.length(1);
      expect(mine.tasks[0]!.meta.poster).to.equal(s.poster.address);
      expect(mine.tasks[0]!.meta.reward).to.deep.include({ amount: "5000000" });
      expect(mine.tasks[0]!.meta.reward.unit.symbol).to.equal("USDC");
      expect(mine.tasks[0]!.state.status).to.equal("open");
      expectError(await s.call("GET", "/api/v1/a2a/tasks/posted"), "AUTH_REQUIRED");
      const one = expectOk(await s.call<{ state: { taskId: string } }>("GET", `/api/v1/tasks/${posted.taskHash}`));
      expect(one.state.taskId).to.equal(posted.taskHash);
      expectError(await s.call("GET", "/api/v1/tasks/0x1234"), "INVALID_TASK_HASH");
      expectError(await s.call("GET", `/api/v1/tasks/${hre.ethers.id("nothing")}`), "TASK_NOT_FOUND");
    });
  });

  it("never keeps a half-written listing when a private brief's keys are refused", async function () {
    const encrypted = encryptBrief("secret");
    const upload = expectOk(
      await s.call<{ rootHash: string }>("POST", "/api/v1/storage/upload", {
        key: posterKey,
        body: { data: Buffer.from(encrypted.ciphertext).toString("base64") },
      }),
    );
    const fields = {
      taskHash: upload.rootHash,
      rootHash: upload.rootHash,
      privacy: "private",
      verificationMode: "manual",
      wrappedKeys: { [s.worker.address]: publicKeyFromPrivateKey("0x" + "11".repeat(32)).slice(0, 10), "not-an-address": "00" },
    };
    const answer = await build(fields);
    expectError(answer, "VALIDATION_FAILED");
    expect(await s.db.selectFrom("listings").selectAll().execute()).to.deep.equal([]);
  });
});

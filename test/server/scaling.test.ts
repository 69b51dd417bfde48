/**
 * The parts of scale-out (docs/scaling.md) one process can check, on SQLite and, under `npm run test:postgres`, on
 * PostgreSQL: the outbox shared by processes (a follower records, the sender signs; two senders at once never reuse a
 * nonce or sign a request twice), limits and locks counted in the database, the migration of the outbox, the blob
 * store in the database, leases (a lock connection that dies hands the lease to another process), the hosted runners
 * following states another process recorded, and SQLite refusing a second process. test/server/scale-out.test.ts runs
 * the real thing: server processes killed with SIGKILL.
 */
import { expect } from "chai";
import hre from "hardhat";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Migrator, sql } from "kysely";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { privateKeyOf, PUBLIC_URL, startTestServer, testDatabase, type TestServer } from "./harness";
import { buildApp, type App } from "../../server/app";
import type { AbuseConfig } from "../../server/config";
import { createChains, type Chain } from "../../server/chains";
import { createOutbox, type Outbox, type OutboxOptions } from "../../server/outbox";
import { createDatabase, isUniqueViolation, migrateToLatest, type Db } from "../../server/db";
import { migrations } from "../../server/db/migrations";
import { withNameLocked } from "../../server/db/locks";
import { createLeases, LEASE_LOCK_NAMESPACE, type Leases } from "../../server/db/leases";
import { lockSqliteFile } from "../../server/db/sqlite-lock";
import { createSharedWindows } from "../../server/http/rate-limit";
import { createBlobStore, createDatabaseBlobStore } from "../../server/storage/blob-store";
import { loadConfig, startServer } from "../../server";
import { contentHash } from "@market/core/crypto";
import { AMOUNT, assignCall, fundedTasks, verifierNonce, verifierOutbox } from "./lifecycle/helpers";
import { waitFor } from "../indexer/helpers";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, type ModelServer } from "../support/model-server";
import { agentOptions, clientOf, fundGas } from "../hosted/helpers";
import { createHosting } from "../../server/hosted";
import { createAgentTokens } from "../../server/auth";

const postgres = () => process.env.TEST_DATABASE_URL !== undefined;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("scale-out within one process", function () {
  describe("the outbox shared by processes", function () {
    let s: TestServer;
    let chain: Chain;
    const outboxes: Outbox[] = [];

    beforeEach(async function () {
      s = await startTestServer();
      // The harness's outbox is the sender; started, it signs what any process records.
      s.outbox.start();
      chain = createChains([s.chainConfig], { provider: () => hre.ethers.provider }).require("arc");
    });
    afterEach(async function () {
      await hre.network.provider.send("evm_setAutomine", [true]);
      for (const outbox of outboxes.splice(0)) await outbox.stop();
      await s.close();
    });

    /** Another process's outbox of the verifier key over the same database. */
    function anotherProcess(options: Partial<OutboxOptions> = {}): Outbox {
      const outbox = verifierOutbox(s, chain, options);
      outboxes.push(outbox);
      return outbox;
    }

    const rows = () => s.db.selectFrom("outbox").selectAll().orderBy("id").execute();

    it("a follower records the request and waits; only the sender signs; a follower made the sender signs what waits", async function () {
      const [first, second] = await fundedTasks(s, 2, "scaling");
      const follower = anotherProcess({ leading: false });
      const base = await verifierNonce(s);

      // The sender (the harness's outbox) signs what the follower recorded; the follower's caller gets the receipt.
      const sent = await follower.send("assign:first", s.escrowAddress, assignCall(s, first!), 10_000);
      expect(sent.receipt.status).to.equal(1);
      expect((await rows()).map((r) => [r.purpose, r.status, r.nonce])).to.deep.equal([["assign:first", "mined", base]]);
      // Asking again, through either process, answers the same transaction.
      expect((await s.outbox.send("assign:first", s.escrowAddress, assignCall(s, first!))).txHash).to.equal(sent.txHash);
      expect((await follower.send("assign:first", s.escrowAddress, assignCall(s, first!))).txHash).to.equal(sent.txHash);

      // Without a sender the request stays recorded, unsigned, and the caller hears TX_PENDING.
      await s.outbox.follow();
      const pending = await follower.send("assign:second", s.escrowAddress, assignCall(s, second!), 300).catch((error: { code?: string }) => error);
      expect((pending as { code?: string }).code).to.equal("TX_PENDING");
      expect((await rows())[1]).to.deep.include({ purpose: "assign:second", status: "queued", nonce: null, raw: null });
      expect(await verifierNonce(s)).to.equal(base + 1);

      // The follower becomes the sender (it took the lease): it signs the waiting request at the next nonce.
      follower.lead();
      const later = await follower.send("assign:second", s.escrowAddress, assignCall(s, second!), 10_000);
      expect(later.receipt.status).to.equal(1);
      expect((await rows()).map((r) => [r.purpose, r.status, r.nonce])).to.deep.equal([
        ["assign:first", "mined", base],
        ["assign:second", "mined", base + 1],
      ]);
      expect(await verifierNonce(s)).to.equal(base + 2);
    });

    it("two senders at once (a lease lost before its holder knows): each request signed once, no nonce used twice", async function () {
      const tasks = await fundedTasks(s, 12, "scaling");
      const other = anotherProcess({ leading: true });
      other.start();
      const base = await verifierNonce(s);
      await hre.network.provider.send("evm_setAutomine", [false]);
      const sending = tasks.map((hash, i) =>
        (i % 2 === 0 ? s.outbox : other).send(`assign:both:${hash}`, s.escrowAddress, assignCall(s, hash), 20_000),
      );
      // The same purposes asked of the other process too, at once.
      const again = tasks.map((hash, i) =>
        (i % 2 === 0 ? other : s.outbox).send(`assign:both:${hash}`, s.escrowAddress, assignCall(s, hash), 20_000),
      );
      await waitFor(async () => (await rows()).filter((r) => r.status === "sent").length === tasks.length, 20_000, "every broadcast");
      await hre.network.provider.send("evm_setAutomine", [true]);
      await hre.network.provider.send("evm_mine", []);
      const sent = await Promise.all(sending);
      const answers = await Promise.all(again);
      expect(answers.map((a) => a.txHash)).to.deep.equal(sent.map((a) => a.txHash));

      const recorded = await rows();
      expect(recorded).to.have.length(tasks.length);
      expect(recorded.every((r) => r.status === "mined" && JSON.parse(r.hashes!).length === 1)).to.equal(true);
      expect(recorded.map((r) => r.nonce).sort((a, b) => a! - b!)).to.deep.equal(Array.from({ length: tasks.length }, (_, i) => base + i));
      expect(await verifierNonce(s)).to.equal(base + tasks.length);
      for (const hash of tasks) expect(await s.escrow.queryFilter(s.escrow.filters.WorkerAssigned(hash))).to.have.length(1);
    });

    it("a request the escrow refuses by the time it is signed ends reverted with the custom error, and takes no nonce", async function () {
      const [task, next] = await fundedTasks(s, 2, "scaling");
      const follower = anotherProcess({ leading: false });
      await s.outbox.follow();
      const refused = follower.send("assign:late", s.escrowAddress, assignCall(s, task!), 10_000).catch((error: unknown) => error);
      await waitFor(async () => (await rows()).length === 1, 5_000, "the request");
      // Cancelled before any sender signs the assignment.
      await (await s.escrow.connect(s.poster).cancelTask(task!)).wait();
      const base = await verifierNonce(s);
      s.outbox.lead();
      const error = (await refused) as { name?: string; revert?: { name: string } };
      expect(error.name).to.equal("OutboxRevert");
      expect(error.revert?.name).to.equal("InvalidStatus");
      expect((await rows())[0]).to.deep.include({ status: "reverted", nonce: null });
      expect(JSON.parse((await rows())[0]!.revert!)).to.have.property("name", "InvalidStatus");
      const sent = await follower.send("assign:next", s.escrowAddress, assignCall(s, next!), 10_000);
      expect((await rows())[1]).to.deep.include({ status: "mined", nonce: base, tx_hash: sent.txHash });
    });
  });

  describe("accept limits across processes", function () {
    let s: TestServer;
    let second: App;
    let follower: Outbox;
    let blobDir: string;
    let posterKey: string;
    let agentKey: string;

    /** The harness's server, and a second API process on its database (a follower outbox, no indexer of its own). */
    async function boot(abuse: Partial<AbuseConfig>) {
      s = await startTestServer({ abuse });
      s.outbox.start();
      await s.sync();
      const chainNow = (await time.latest()) * 1000;
      const chains = createChains([s.chainConfig], { provider: () => hre.ethers.provider });
      follower = createOutbox({
        db: s.db,
        chain: chains.require("arc"),
        signer: new hre.ethers.Wallet(privateKeyOf(s.verifier), hre.ethers.provider),
        now: Date.now,
        pollMs: 20,
        leading: false,
      });
      blobDir = mkdtempSync(path.join(tmpdir(), "market-second-"));
      second = await buildApp({
        db: s.db,
        chains,
        blobs: createBlobStore(blobDir),
        config: { publicUrl: PUBLIC_URL, rateLimit: { perIp: 1e9, perKey: 1e9, windowMs: 60_000 }, offerWindowMs: 0, abuse },
        outboxes: new Map([["arc", follower]]),
        now: () => Math.max(Date.now(), chainNow),
        logger: false,
        indexerWaitMs: 5_000,
        verifierAddress: s.verifier.address,
      });
      posterKey = await s.apiKeyFor(s.poster);
      agentKey = await s.registerAgent(s.worker, ["summarization"]);
    }
    afterEach(async function () {
      await second?.close();
      await follower?.stop();
      await s?.close();
      rmSync(blobDir, { recursive: true, force: true });
    });

    const post = () => s.post(s.poster, posterKey, s.publicTask(`A brief for the scaling test ${Math.random()}`), AMOUNT);
    const acceptThrough = async (app: App | "first", taskHash: string) => {
      if (app === "first") return s.call("POST", `/api/v1/a2a/tasks/${taskHash}/accept`, { key: agentKey });
      const response = await app.inject({ method: "POST", url: `/api/v1/a2a/tasks/${taskHash}/accept`, headers: { "x-api-key": agentKey } });
      return { status: response.statusCode, body: response.json<{ error: { code: string } }>() };
    };

    it("the undelivered cap holds for accepts at once through two processes (the agent's turn is a database lock)", async function () {
      await boot({ assignmentCap: { base: 1, completionsPerSlot: 5, max: 25 } });
      const tasks: string[] = [];
      for (let i = 0; i < 6; i++) tasks.push((await post()).taskHash);
      // Three accepts at once through each process: one slot, so one assignment.
      const answers = await Promise.all(tasks.map((taskHash, i) => acceptThrough(i % 2 === 0 ? "first" : second, taskHash)));
      expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 429, 429, 429, 429, 429]);
      for (const refused of answers.filter((a) => a.status === 429)) expect(refused.body.error.code).to.equal("ASSIGNMENT_CAP_REACHED");
      expect(await s.db.selectFrom("outbox").select("purpose").execute()).to.have.length(1);
    });

    it("the accept rate counts accepts through every process", async function () {
      await boot({ acceptsPerMinute: 2 });
      const tasks = [(await post()).taskHash, (await post()).taskHash, (await post()).taskHash];
      expect((await acceptThrough("first", tasks[0]!)).status).to.equal(200);
      expect((await acceptThrough(second, tasks[1]!)).status).to.equal(200);
      const third = await acceptThrough("first", tasks[2]!);
      expect([third.status, third.body.error.code]).to.deep.equal([429, "RATE_LIMITED"]);
    });
  });

  describe("hosted runners follow the states another process records", function () {
    let stack: Stack | undefined;
    let model: ModelServer | undefined;
    afterEach(async function () {
      await stack?.close();
      await model?.close();
      stack = model = undefined;
    });

    it("a start, a restart and a stop asked of a process that runs no agent: the runners' holder follows each", async function () {
      stack = await startStack();
      model = await startModelServer();
      const owner = await clientOf(stack, stack.stranger);
      const agent = (await owner.deployAgent(agentOptions(model))).agent;
      await fundGas(stack.stranger, agent.address);
      // Another API process: same database, its runners never attached (it does not hold their lease).
      const other = createHosting({
        db: stack.db,
        chains: createChains([stack.chainConfig], { provider: () => hre.ethers.provider }),
        config: stack.hostedConfig,
        tokens: createAgentTokens({ db: stack.db, now: Date.now }),
        now: Date.now,
        logger: { info() {}, warn() {} },
      });
      const { account_id: accountId } = await stack.db
        .selectFrom("hosted_agents")
        .select("account_id")
        .where("id", "=", agent.id)
        .executeTakeFirstOrThrow();
      const principal = { kind: "apiKey" as const, accountId, wallet: stack.stranger.address };

      expect((await other.agents.start(principal, agent.id)).state).to.equal("running");
      expect(other.runners.isRunning(agent.id)).to.equal(false);
      expect(stack.hosting.runners.isRunning(agent.id)).to.equal(false);
      await stack.hosting.reconcile();
      expect(stack.hosting.runners.isRunning(agent.id)).to.equal(true);
      const tokens = () => stack!.db.selectFrom("hosted_agent_tokens").select("agent_id").where("agent_id", "=", agent.id).execute();
      expect(await tokens()).to.have.length(1);

      // A restart asked of the other process: the run starts again, with a new token.
      const before = await stack.db.selectFrom("hosted_agent_tokens").select("token_hash").where("agent_id", "=", agent.id).executeTakeFirstOrThrow();
      expect((await other.agents.restart(principal, agent.id)).state).to.equal("running");
      expect(await tokens()).to.have.length(0);
      await stack.hosting.reconcile();
      expect(stack.hosting.runners.isRunning(agent.id)).to.equal(true);
      const after = await stack.db.selectFrom("hosted_agent_tokens").select("token_hash").where("agent_id", "=", agent.id).executeTakeFirstOrThrow();
      expect(after.token_hash).to.not.equal(before.token_hash);

      expect((await other.agents.stop(principal, agent.id)).state).to.equal("stopped");
      // The token goes at once; the run stops at the holder's next round.
      expect(await tokens()).to.have.length(0);
      await stack.hosting.reconcile();
      expect(stack.hosting.runners.isRunning(agent.id)).to.equal(false);
    });
  });

  describe("state in the database", function () {
    let db: Db;
    let url: string | undefined;
    let drop: () => Promise<void>;
    beforeEach(async function () {
      ({ db, url, drop } = await testDatabase());
    });
    afterEach(async function () {
      await drop();
    });

    it("rate windows: every process counts into the same window", async function () {
      const one = createSharedWindows(db, "test", 60_000);
      const two = createSharedWindows(db, "test", 60_000);
      const at = 1_000_000;
      expect(await one.hit("agent", 3, at)).to.equal(undefined);
      expect(await two.hit("agent", 3, at + 1)).to.equal(undefined);
      expect(await one.hit("agent", 3, at + 2)).to.equal(undefined);
      expect(await two.hit("agent", 3, at + 30_000)).to.equal(30);
      expect(await one.hit("other", 3, at + 30_000)).to.equal(undefined);
      // The window ends: counting starts again.
      expect(await two.hit("agent", 3, at + 60_000)).to.equal(undefined);
      const kept = await db.selectFrom("rate_windows").selectAll().where("key", "=", "test:agent").executeTakeFirstOrThrow();
      expect(kept).to.deep.include({ started_at: at + 60_000, count: 1 });
    });

    it("a name lock: one transaction at a time per name, across connections", async function () {
      // On PostgreSQL a second pool stands for another process; SQLite has one connection per process.
      const otherDb = url ? createDatabase({ databaseUrl: url }) : db;
      try {
        const events: string[] = [];
        const hold = (database: Db, name: string, label: string, ms: number) =>
          withNameLocked(database, name, Date.now(), async (trx) => {
            events.push(`${label} in`);
            await sleep(ms);
            await trx.selectFrom("row_locks").select("name").execute();
            events.push(`${label} out`);
          });
        const first = hold(db, "accept:agent", "first", 300);
        await sleep(50);
        await Promise.all([first, hold(otherDb, "accept:agent", "second", 10)]);
        expect(events).to.deep.equal(["first in", "first out", "second in", "second out"]);
        if (url) {
          // Another name does not wait.
          events.length = 0;
          const long = hold(db, "accept:a", "a", 300);
          await sleep(50);
          await hold(otherDb, "accept:b", "b", 10);
          await long;
          expect(events).to.deep.equal(["a in", "b in", "b out", "a out"]);
        }
      } finally {
        if (otherDb !== db) await otherDb.destroy();
      }
    });

    it("blobs in the database: any process reads what one stored", async function () {
      const one = createDatabaseBlobStore(db);
      const two = createDatabaseBlobStore(db);
      const bytes = new TextEncoder().encode("ciphertext of a private brief");
      const stored = await one.put(bytes);
      expect(stored).to.deep.equal({ rootHash: contentHash(bytes), size: bytes.length });
      expect(await one.put(bytes)).to.deep.equal(stored);
      expect(Buffer.from((await two.get(stored.rootHash.toUpperCase().replace("0X", "0x")))!).toString()).to.equal("ciphertext of a private brief");
      expect(await two.has(stored.rootHash)).to.equal(true);
      expect(await two.get(`0x${"00".repeat(32)}`)).to.equal(undefined);
      expect(await two.has("not a hash")).to.equal(false);
      // The collector's removal is seen by every process; removing what is not there, or a bad name, is nothing.
      await one.delete(stored.rootHash);
      expect(await two.has(stored.rootHash)).to.equal(false);
      expect(await two.get(stored.rootHash)).to.equal(undefined);
      await two.delete(stored.rootHash);
      await two.delete("not a hash");
    });

    it("the scale-out migration keeps every outbox entry and allows one live entry per purpose", async function () {
      // The schema before the migration: a fresh SQLite database, or this PostgreSQL one migrated back.
      const old = url ? db : createDatabase({ sqlitePath: ":memory:" });
      try {
        const migrated = await new Migrator({ db: old, provider: { getMigrations: async () => migrations } }).migrateTo(
          "2026-11-23T04-00-00_mcp-quotes",
        );
        expect(migrated.error).to.equal(undefined);
        const entry = {
          chain: "arc",
          sender: s0,
          nonce: 7,
          purpose: "assign:old",
          to_address: s0,
          data: "0x1234",
          gas_limit: "100000",
          max_fee: "10",
          priority_fee: "1",
          raw: "0xraw",
          tx_hash: `0x${"ab".repeat(32)}`,
          hashes: JSON.stringify([`0x${"ab".repeat(32)}`]),
          status: "mined" as const,
          attempts: 1,
          mined_block: 12,
          error: null,
          created_at: 1,
          sent_at: 2,
          updated_at: 3,
        };
        const before = await old.insertInto("outbox").values(entry).returning("id").executeTakeFirstOrThrow();
        await migrateToLatest(old);
        expect(await old.selectFrom("outbox").selectAll().execute()).to.deep.equal([{ id: before.id, ...entry, revert: null }]);

        const queued = { ...entry, nonce: null, raw: null, tx_hash: null, hashes: null, gas_limit: null, max_fee: null, priority_fee: null };
        const second = await old
          .insertInto("outbox")
          .values({ ...queued, purpose: "assign:new", status: "queued" })
          .returning("id")
          .executeTakeFirstOrThrow();
        expect(second.id).to.be.greaterThan(before.id);
        const again = await old
          .insertInto("outbox")
          .values({ ...queued, purpose: "assign:new", status: "queued" })
          .execute()
          .catch((error: unknown) => error);
        expect(isUniqueViolation(again)).to.equal(true);
        // A reverted entry makes room for the purpose again.
        await old.updateTable("outbox").set({ status: "reverted" }).where("id", "=", second.id).execute();
        await old
          .insertInto("outbox")
          .values({ ...queued, purpose: "assign:new", status: "queued" })
          .execute();
        expect(await old.selectFrom("outbox").select("status").where("purpose", "=", "assign:new").orderBy("id").execute()).to.deep.equal([
          { status: "reverted" },
          { status: "queued" },
        ]);
      } finally {
        if (old !== db) await old.destroy();
      }
    });
  });

  describe("leases", function () {
    const opened: Leases[] = [];
    afterEach(async function () {
      for (const leases of opened.splice(0)) await leases.close();
    });

    function role(log: string[], label: string) {
      return {
        acquired: () => void log.push(`${label} acquired`),
        lost: () => void log.push(`${label} lost`),
      };
    }

    it("on SQLite the only process holds every lease until it closes", async function () {
      const log: string[] = [];
      const leases = createLeases({});
      leases.hold("indexer:arc", role(log, "indexer"));
      leases.hold("hosted-runners", role(log, "hosted"));
      await waitFor(async () => log.length === 2, 1_000, "both roles");
      expect(leases.names()).to.deep.equal(["hosted-runners", "indexer:arc"]);
      await leases.release("hosted-runners");
      expect(leases.names()).to.deep.equal(["indexer:arc"]);
      await leases.close();
      expect(log).to.deep.equal(["indexer acquired", "hosted acquired", "hosted lost", "indexer lost"]);
    });

    it("on PostgreSQL one process holds a lease; when its lock connection dies another takes over", async function () {
      if (!postgres()) this.skip();
      const { url, drop } = await testDatabase();
      const admin = createDatabase({ databaseUrl: url });
      try {
        const log: string[] = [];
        // The first tries every second: once its connection dies it sits that long out, the second tries every 50 ms.
        const one = createLeases({ databaseUrl: url, retryMs: 1_000 });
        const two = createLeases({ databaseUrl: url, retryMs: 50 });
        opened.push(one, two);
        one.hold("test:lease", role(log, "one"));
        await waitFor(async () => one.held("test:lease"), 5_000, "the first process to hold it");
        two.hold("test:lease", role(log, "two"));
        await sleep(300);
        expect(two.held("test:lease")).to.equal(false);

        // The holder's connection dies (its process was killed, or the network dropped it).
        const { rows } = await sql<{ pid: number }>`select pid from pg_locks where locktype = 'advisory' and granted
          and classid = ${LEASE_LOCK_NAMESPACE} and objid = (hashtext('test:lease')::bigint & 4294967295)::oid`.execute(admin);
        expect(rows).to.have.length(1);
        const lostAt = Date.now();
        await sql`select pg_terminate_backend(${rows[0]!.pid})`.execute(admin);
        await waitFor(async () => two.held("test:lease"), 5_000, "the second process to take it over");
        expect(Date.now() - lostAt).to.be.below(2_000);
        await waitFor(async () => log.includes("one lost"), 5_000, "the first process to stop its role");
        expect(one.held("test:lease")).to.equal(false);
        // The first comes back (a new lock connection) and waits: the lease is the second's.
        await sleep(300);
        expect(one.held("test:lease")).to.equal(false);
        await two.close();
        await waitFor(async () => one.held("test:lease"), 5_000, "the first process to take it back");
        expect(log.filter((l) => l.startsWith("one"))).to.deep.equal(["one acquired", "one lost", "one acquired"]);
        expect(log.filter((l) => l.startsWith("two"))).to.deep.equal(["two acquired", "two lost"]);
      } finally {
        await admin.destroy();
        for (const leases of opened.splice(0)) await leases.close();
        await drop();
      }
    });
  });

  describe("SQLite serves one process", function () {
    let dir: string;
    beforeEach(function () {
      dir = mkdtempSync(path.join(tmpdir(), "market-sqlite-lock-"));
    });
    afterEach(function () {
      rmSync(dir, { recursive: true, force: true });
    });

    it("a second server on the same SQLite file is refused, naming the process that serves it", async function () {
      const file = path.join(dir, "market.sqlite");
      const release = lockSqliteFile(file);
      try {
        expect(() => lockSqliteFile(file)).to.throw(`is served by process ${process.pid}: SQLite serves one API process`);
        const config = { ...loadConfig({ SQLITE_PATH: file, BLOB_DIR: path.join(dir, "blobs"), PORT: "0", LOG_LEVEL: "silent" }), chains: [] };
        const refused = await startServer(config).catch((error: Error) => error);
        expect((refused as Error).message).to.match(/SQLite serves one API process.*DATABASE_URL/);
      } finally {
        release();
      }
      // Released: the file is served again.
      lockSqliteFile(file)();
    });

    it("a lock left by a process that died is taken over; one held by a live process is not", async function () {
      const file = path.join(dir, "market.sqlite");
      const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
      try {
        writeFileSync(`${file}.lock`, String(child.pid));
        expect(() => lockSqliteFile(file)).to.throw(`is served by process ${child.pid}`);
      } finally {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGKILL");
        await exited;
      }
      const release = lockSqliteFile(file);
      release();
    });
  });
});

const s0 = "0x0000000000000000000000000000000000000001";

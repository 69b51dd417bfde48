/**
 * Indexer transactions against another connection's writes (the API's, on a SQLite file in WAL mode): a transaction
 * that read first would hold a snapshot, and another connection committing before its first write would make that
 * write fail at once with SQLITE_BUSY_SNAPSHOT, whatever the busy timeout. Each indexer transaction writes first.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import SQLite from "better-sqlite3";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import type { KyselyPlugin, QueryId } from "kysely";
import { createDatabase, migrateToLatest, type Db } from "../../server/db";
import { createTaskProjection, readCursor, type Projection } from "../../server/indexer";
import { rollbackTo } from "../../server/indexer/reorg";
import { deployEscrowFixture } from "../fixtures/escrow";
import { chainConfig, dumpTables, freshIndexDump, inProcessIndexer, mineBlocks, randomActivity, syncToHead } from "./helpers";

/**
 * Another connection to the file, as the API has: `write()` inserts a sign-in nonce and tells how it ended,
 * "committed" or the SQLite error code (no busy timeout: the test runs on one thread, waiting would hold up the
 * indexer too).
 */
function otherConnection(file: string) {
  const other = new SQLite(file, { timeout: 0 });
  let n = 0;
  return {
    write(): string {
      try {
        other.prepare("insert into auth_nonces (nonce, address, created_at, expires_at, used_at) values (?, ?, 0, 0, null)").run(`n${n++}`, "0x0");
        return "committed";
      } catch (error) {
        return (error as { code?: string }).code ?? String(error);
      }
    },
    close: () => other.close(),
  };
}

/** Once armed, another connection writes right after the next SELECT of `db` returns; `outcome()` tells how it ended. */
function writeAfterNextRead(file: string) {
  const other = otherConnection(file);
  const selects = new WeakSet<QueryId>();
  let armed = false;
  let outcome: string | undefined;
  const plugin: KyselyPlugin = {
    transformQuery({ node, queryId }) {
      if (armed && node.kind === "SelectQueryNode") selects.add(queryId);
      return node;
    },
    async transformResult({ result, queryId }) {
      if (armed && selects.has(queryId)) {
        armed = false;
        outcome = other.write();
      }
      return result;
    },
  };
  return {
    plugin,
    arm: () => (armed = true),
    outcome: () => outcome,
    close: () => other.close(),
  };
}

describe("indexer transactions and other connections", function () {
  let dir: string;
  let file: string;
  let db: Db;

  beforeEach(async function () {
    dir = mkdtempSync(path.join(tmpdir(), "indexer-lock-"));
    file = path.join(dir, "market.sqlite");
    db = createDatabase({ sqlitePath: file });
    await migrateToLatest(db);
  });
  afterEach(async function () {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a rollback holds the write lock before it reads: another connection's commit cannot fail it", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 40, steps: 20, tag: "lock-rollback" });
    await syncToHead(inProcessIndexer(db, chain));
    const cursor = (await readCursor(db, "arc"))!;
    expect((await dumpTables(db)).events).to.not.have.length(0);

    const api = writeAfterNextRead(file);
    try {
      api.arm();
      const removed = await rollbackTo(db.withPlugin(api.plugin), "arc", cursor, undefined, [createTaskProjection()], Date.now());
      expect(removed).to.not.have.length(0);
      // The other connection found the lock taken (it would wait for it, with its busy timeout).
      expect(api.outcome()).to.equal("SQLITE_BUSY");
    } finally {
      api.close();
    }
    expect(await dumpTables(db)).to.deep.equal({ cursor: null, events: [], tasks: [], state: [] });
  });

  it("a range's transaction writes first too, whatever its projections read", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 41, steps: 20, tag: "lock-range" });
    await syncToHead(inProcessIndexer(db, chain));
    await mineBlocks(3); // a range without events: the projections run before anything is written

    const api = writeAfterNextRead(file);
    const readsFirst: Projection = {
      name: "reads-first",
      async apply(trx, chain) {
        await trx.selectFrom("escrow_state").selectAll().where("chain", "=", chain).execute();
      },
      async rollback() {},
    };
    try {
      const indexer = inProcessIndexer(db.withPlugin(api.plugin), chain, {
        projections: [readsFirst, createTaskProjection()],
        onStep: (step) => {
          if (step === "range-fetched") api.arm();
        },
      });
      expect((await indexer.syncOnce()).caughtUp).to.equal(true);
      expect(api.outcome()).to.equal("SQLITE_BUSY");
    } finally {
      api.close();
    }
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
  });

  it("yieldBetweenCommits: another connection's write gets in between the transactions of one range", async function () {
    const fixture = await loadFixture(deployEscrowFixture);
    const chain = chainConfig(fixture);
    await randomActivity(fixture, { seed: 42, steps: 20, tag: "lock-yield" });
    const other = otherConnection(file);
    let commits = 0;
    let ranges = 0;
    let written: { outcome: string; afterCommits: number } | undefined;
    try {
      const indexer = inProcessIndexer(db, chain, {
        maxEventsPerCommit: 2,
        yieldBetweenCommits: true,
        // One range holds every block: its transactions are what the write must get in between.
        blockRange: { initial: 2_000 },
        onStep: (step) => {
          if (step === "range-fetched") ranges++;
          if (step !== "committed" || ++commits !== 1) return;
          // The API's write, due right after the range's first transaction.
          setTimeout(() => (written = { outcome: other.write(), afterCommits: commits }), 0);
        },
      });
      await syncToHead(indexer);
    } finally {
      other.close();
    }
    expect(ranges).to.equal(1);
    expect(commits).to.be.greaterThan(3);
    expect(written).to.deep.equal({ outcome: "committed", afterCommits: 1 });
    expect(await dumpTables(db)).to.deep.equal(await freshIndexDump(chain));
  });
});

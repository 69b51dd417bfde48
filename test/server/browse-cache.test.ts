/**
 * What browsing answers from memory (server/tasks/queries.ts), on SQLite and, with TEST_DATABASE_URL, PostgreSQL: a page
 * while nothing was written since (on PostgreSQL: to the tables a browse reads), and its `total` recounted once it is
 * 2 seconds old and what it counted changed, one count at a time per filter,
 * the previous total answered while the recount runs, so no request waits for a count but a filter's first; and the
 * requests that find the database changed at once share one query.
 */
import { expect } from "chai";
import { sql, type KyselyPlugin } from "kysely";
import type { Db } from "../../server/db";
import { createTaskQueries } from "../../server/tasks/queries";
import { createBrowseVersions } from "../../server/tasks/browse-version";
import { EscrowStatus, Ending } from "@market/core/escrow";
import { testDatabase } from "./harness";

const POSTER = "0x00000000000000000000000000000000000000a1";

const onPostgres = (db: Db) => db.getExecutor().adapter.constructor.name === "PostgresAdapter";

/** A write to a table no browse reads (a sign-in nonce). */
async function writeNonce(db: Db, i: number) {
  await db
    .insertInto("auth_nonces")
    .values({ nonce: `nonce-${i}`, address: POSTER, created_at: 1, expires_at: 2, used_at: null })
    .execute();
}
const TOKEN = "0x3600000000000000000000000000000000000000";

/** An open public task, listed at `listedAt`, open until `deadline` (seconds). */
async function listTask(db: Db, i: number, listedAt: number, deadline = 4_000_000_000) {
  const taskHash = `0x${i.toString(16).padStart(64, "0")}`;
  await db
    .insertInto("listings")
    .values({
      task_hash: taskHash,
      chain: "arc",
      poster: POSTER,
      privacy: "public",
      public_brief: `brief ${i}`,
      routing_summary: null,
      root_hash: null,
      verification_mode: "auto",
      verification_criteria: null,
      required_capabilities: "[]",
      location_zone: "global",
      target_executor: null,
      target_executor_type: null,
      service_id: null,
      verifier_address: null,
      key_custody_blob: null,
      token: TOKEN,
      funding_tx: taskHash,
      listed_at: listedAt,
    })
    .execute();
  await db
    .insertInto("escrow_tasks")
    .values({
      chain: "arc",
      task_hash: taskHash,
      poster: POSTER,
      token: TOKEN,
      amount: "1000",
      verifier: null,
      worker: null,
      assigned_by: null,
      deadline,
      status: EscrowStatus.Funded,
      rounds: 0,
      ending: Ending.None,
      result_hash: null,
      phase_at: null,
      last_score: null,
      payout: null,
      fee: null,
      created_block: 1,
      created_tx: taskHash,
      updated_block: 1,
    })
    .execute();
}

describe("browse from memory", function () {
  it("answers a page again while nothing was written, and a new one after any write", async function () {
    const { db, drop } = await testDatabase();
    try {
      let clock = 1_000_000;
      for (let i = 0; i < 3; i++) await listTask(db, i, i);
      const queries = createTaskQueries({ db, now: () => clock });
      const first = await queries.browse({ capabilities: [] });
      expect(first.tasks).to.have.length(3);
      clock += 500;
      expect(await queries.browse({ capabilities: [] })).to.equal(first);
      // On PostgreSQL the write may go through another connection of the pool: any commit changes the snapshot.
      await listTask(db, 3, 3);
      const second = await queries.browse({ capabilities: [] });
      expect(second).to.not.equal(first);
      expect(second.tasks.map((t) => t.state.taskId)[0]).to.equal(`0x${(3).toString(16).padStart(64, "0")}`);
      clock += 1_000; // past PAGE_TTL_MS: asked again though nothing changed (a deadline may have passed)
      const third = await queries.browse({ capabilities: [] });
      expect(third).to.not.equal(second);
      expect(third).to.deep.equal(second);
    } finally {
      await drop();
    }
  });

  it("requests that find the database changed at once share one page query of that version (issue 30)", async function () {
    const { db, drop } = await testDatabase();
    let pageQueries = 0;
    const pageWatch: KyselyPlugin = {
      transformQuery: ({ node }) => {
        if (node.kind === "SelectQueryNode" && node.limit) pageQueries++;
        return node;
      },
      transformResult: async ({ result }) => result,
    };
    try {
      for (let i = 0; i < 3; i++) await listTask(db, i, i);
      const queries = createTaskQueries({ db: db.withPlugin(pageWatch), now: () => 1_000_000 });
      await queries.browse({ capabilities: [] });
      expect(pageQueries).to.equal(1);
      await listTask(db, 3, 3);
      const pages = await Promise.all(Array.from({ length: 5 }, () => queries.browse({ capabilities: [] })));
      expect(pageQueries).to.equal(2);
      for (const page of pages) expect(page).to.equal(pages[0]);
      expect(pages[0]!.tasks.map((t) => t.state.taskId)[0]).to.equal(`0x${(3).toString(16).padStart(64, "0")}`);
    } finally {
      await drop();
    }
  });

  it("recounts a full page's total once 2 s old, by a single count, the previous total answered meanwhile", async function () {
    const { db, drop } = await testDatabase();
    let counts = 0;
    /** Holds each count's answer until released, to look at the requests that come in the meantime. */
    let release: (() => void) | undefined;
    let held: Promise<void> | undefined;
    const countWatch: KyselyPlugin = {
      transformQuery: ({ node }) => {
        if (node.kind === "SelectQueryNode" && JSON.stringify(node).includes('"func":"count"')) counts++;
        return node;
      },
      transformResult: async ({ result }) => {
        if (held && (result.rows[0] as { n?: unknown } | undefined)?.n !== undefined) await held;
        return result;
      },
    };
    try {
      let clock = 1_000_000;
      for (let i = 0; i < 101; i++) await listTask(db, i, i);
      const queries = createTaskQueries({ db: db.withPlugin(countWatch), now: () => clock });
      const totalNow = async () => (await queries.browse({ capabilities: [] })).total;

      expect(await totalNow()).to.equal(101);
      expect(counts).to.equal(1);
      await listTask(db, 101, 101);
      clock += 1_500; // under 2 s: the count stands (a new listing changed the page)
      expect(await totalNow()).to.equal(101);
      expect(counts).to.equal(1);

      clock += 1_000; // 2.5 s: recounted, once, while three requests are answered the previous total
      held = new Promise<void>((resolve) => (release = resolve));
      expect(await Promise.all([totalNow(), totalNow(), totalNow()])).to.deep.equal([101, 101, 101]);
      expect(counts).to.equal(2);
      release!();
      held = undefined;
      await new Promise((resolve) => setTimeout(resolve, 10));
      clock += 1_100; // past the page cache's second, under 2 s since the recount began
      expect(await totalNow()).to.equal(102);
      expect(counts).to.equal(2);

      // A filter never counted waits for its one count.
      const filtered = await Promise.all([queries.browse({ capabilities: ["web_research"] }), queries.browse({ capabilities: ["web_research"] })]);
      expect(filtered.map((p) => p.total)).to.deep.equal([102, 102]);
      expect(counts).to.equal(3);
    } finally {
      await drop();
    }
  });

  it("on PostgreSQL, a write to a table no browse reads leaves the page in memory; a write to one that does, not (issue 30)", async function () {
    const { db, drop } = await testDatabase();
    try {
      for (let i = 0; i < 3; i++) await listTask(db, i, i);
      const queries = createTaskQueries({ db, now: () => 1_000_000 });
      const first = await queries.browse({ capabilities: [] });
      await writeNonce(db, 1);
      const afterNonce = await queries.browse({ capabilities: [] });
      // SQLite tells any committed write (data_version): the page is read again, the same answer.
      if (onPostgres(db)) expect(afterNonce).to.equal(first);
      else expect(afterNonce).to.not.equal(first);
      expect(afterNonce).to.deep.equal(first);
      // A capability added to a listed task hides it from a browse that names none.
      await db
        .insertInto("listing_capabilities")
        .values({ task_hash: `0x${(2).toString(16).padStart(64, "0")}`, tag: "translation" })
        .execute();
      const afterTag = await queries.browse({ capabilities: [] });
      expect(afterTag.tasks.map((t) => t.state.taskId)).to.deep.equal([1, 0].map((i) => `0x${i.toString(16).padStart(64, "0")}`));
      // An escrow task that is no longer Funded leaves the browse.
      await db
        .updateTable("escrow_tasks")
        .set({ status: EscrowStatus.Cancelled })
        .where("task_hash", "=", `0x${(1).toString(16).padStart(64, "0")}`)
        .execute();
      expect((await queries.browse({ capabilities: [] })).tasks).to.have.length(1);
    } finally {
      await drop();
    }
  });

  it("keeps a total past 2 s while nothing it counted changed, and recounts once a counted deadline passes (issue 30)", async function () {
    const { db, drop } = await testDatabase();
    let counts = 0;
    const countWatch: KyselyPlugin = {
      transformQuery: ({ node }) => {
        if (node.kind === "SelectQueryNode" && JSON.stringify(node).includes('"func":"count"')) counts++;
        return node;
      },
      transformResult: async ({ result }) => result,
    };
    try {
      let clock = 1_000_000;
      for (let i = 0; i < 100; i++) await listTask(db, i, i);
      await listTask(db, 100, 100, 1_010); // open until 1,010 s
      const queries = createTaskQueries({ db: db.withPlugin(countWatch), now: () => clock });
      const totalNow = async () => (await queries.browse({ capabilities: [] })).total;
      expect(await totalNow()).to.equal(101);
      expect(counts).to.equal(1);
      // Far past 2 s, nothing written: the count stands (on PostgreSQL, a write elsewhere changes nothing either).
      for (const step of [3_000, 2_500]) {
        clock += step;
        if (onPostgres(db)) await writeNonce(db, step);
        expect(await totalNow()).to.equal(101);
      }
      expect(counts).to.equal(1);
      clock = 1_010_000; // the task open until 1,010 s has expired: recounted, the previous total answered meanwhile
      expect(await totalNow()).to.equal(101);
      expect(counts).to.equal(2);
      await new Promise((resolve) => setTimeout(resolve, 50));
      clock += 1_100;
      expect(await totalNow()).to.equal(100);
      expect(counts).to.equal(2);
    } finally {
      await drop();
    }
  });

  it("on PostgreSQL, a browse table's write counts once it commits, and a version older than the records kept counts as changed", async function () {
    const { db, drop } = await testDatabase();
    try {
      if (!onPostgres(db)) this.skip();
      let clock = 0;
      const versions = createBrowseVersions({ db, now: () => clock });
      const { version: v0 } = await versions.read(undefined);
      // A listing written in a transaction still open is no change yet; it is one once committed.
      let commit!: () => void;
      const held = new Promise<void>((resolve) => (commit = resolve));
      let written!: () => void;
      const inTransaction = new Promise<void>((resolve) => (written = resolve));
      const transaction = db.transaction().execute(async (trx) => {
        await listTask(trx, 7, 7);
        written();
        await held;
      });
      await inTransaction;
      expect((await versions.read(v0)).changed).to.equal(false);
      commit();
      await transaction;
      const { version: v1, changed } = await versions.read(v0);
      expect(changed).to.equal(true);
      expect((await versions.read(v1)).changed).to.equal(false);
      // Every minute an instance removes the records every snapshot since its previous turn sees as done: a version
      // taken before that turn counts as changed, a later one does not.
      const horizon = async () => String((await sql<{ h: string }>`select xid::text as h from browse_change_horizon`.execute(db)).rows[0]!.h);
      expect(await horizon()).to.equal("0");
      // The first turn only notes a snapshot; the next removes what that one saw done (turns run beside the reads).
      for (let turn = 0; (await horizon()) === "0"; turn++) {
        if (turn === 100) throw new Error("no cleanup turn ran");
        clock += 60_000;
        await versions.read(v1);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const kept = await sql<{ n: string }>`select count(*) as n from browse_changes`.execute(db);
      expect(Number(kept.rows[0]!.n)).to.equal(0);
      expect((await versions.read(v0)).changed).to.equal(true);
      const { version: v3 } = await versions.read(undefined);
      expect((await versions.read(v3)).changed).to.equal(false);
    } finally {
      await drop();
    }
  });
});

/**
 * Write races on the database: a read-then-write transaction overtaken by another connection's commit, and two
 * inserts of one key, run again by `retryConflicts` until they see the winner.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { createDatabase, isUniqueViolation, isWriteConflict, migrateToLatest, retryConflicts, type Db } from "../../server/db";

describe("server: database write races", function () {
  let dir: string;
  let a: Db;
  let b: Db;

  beforeEach(async function () {
    dir = mkdtempSync(path.join(tmpdir(), "market-db-"));
    const sqlitePath = path.join(dir, "market.sqlite");
    a = createDatabase({ sqlitePath });
    await migrateToLatest(a);
    b = createDatabase({ sqlitePath });
  });

  afterEach(async function () {
    await a.destroy();
    await b.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A read-then-insert transaction on `a` that lets `b` commit between its read and its write on the first run. */
  function overtakenOnce() {
    let runs = 0;
    const work = () =>
      a.transaction().execute(async (trx) => {
        runs += 1;
        const seen = await trx
          .selectFrom("accounts")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow();
        if (runs === 1) await b.insertInto("accounts").values({ created_at: 1 }).execute();
        await trx.insertInto("accounts").values({ created_at: 2 }).execute();
        return Number(seen.n);
      });
    return { work, runs: () => runs };
  }

  it("a transaction whose snapshot went stale fails with a write conflict", async function () {
    const { work } = overtakenOnce();
    const error = await work().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as { code?: string })?.code).to.equal("SQLITE_BUSY_SNAPSHOT");
    expect(isWriteConflict(error)).to.equal(true);
    const rows = await a.selectFrom("accounts").select("created_at").execute();
    expect(rows.map((r) => r.created_at)).to.deep.equal([1]);
  });

  it("retryConflicts runs it again on a fresh snapshot, which sees the other commit", async function () {
    const { work, runs } = overtakenOnce();
    expect(await retryConflicts(work)).to.equal(1);
    expect(runs()).to.equal(2);
    const rows = await a.selectFrom("accounts").select("created_at").orderBy("id").execute();
    expect(rows.map((r) => r.created_at)).to.deep.equal([1, 2]);
  });

  it("retries unique violations only when asked, and gives up after the last attempt", async function () {
    await a.insertInto("accounts").values({ created_at: 1 }).execute();
    const account = await a.selectFrom("accounts").select("id").executeTakeFirstOrThrow();
    const link = () =>
      a
        .insertInto("account_wallets")
        .values({ address: "0x" + "1".repeat(40), account_id: account.id, position: 0, linked_at: 1 })
        .execute();
    await link();

    let calls = 0;
    const counted = () => {
      calls += 1;
      return link();
    };
    const once = await retryConflicts(counted).catch((e: unknown) => e);
    expect(isUniqueViolation(once)).to.equal(true);
    expect(calls).to.equal(1);

    calls = 0;
    const exhausted = await retryConflicts(counted, { retryUnique: true, attempts: 3 }).catch((e: unknown) => e);
    expect(isUniqueViolation(exhausted)).to.equal(true);
    expect(calls).to.equal(3);
  });

  it("does not retry other errors", async function () {
    let calls = 0;
    const failing = async () => {
      calls += 1;
      throw new Error("not a conflict");
    };
    const error = await retryConflicts(failing, { retryUnique: true }).catch((e: unknown) => e);
    expect((error as Error).message).to.equal("not a conflict");
    expect(calls).to.equal(1);
  });
});

/**
 * WAL checkpoints of a SQLite file on a thread of their own (server/db/checkpointer.ts): connections opened on a file
 * leave checkpoints out of their commits, the thread copies the WAL back and it starts over, a writer without pause
 * gets its WAL restarted at the bound, the thread ends with the file's last connection, and a thread that dies gives
 * the connections SQLite's own checkpoints back.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import SQLite from "better-sqlite3";
import { sql } from "kysely";
import { createDatabase, migrateToLatest } from "../../server/db";
import { checkpointerOf, checkpointInBackground, RESTART_PAGES, WRITER_LIMIT_FACTOR } from "../../server/db/checkpointer";

async function until<T>(read: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("server/db: WAL checkpoints on their own thread", function () {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), "checkpoint-"))));
  // A thread told to stop closes its connection on its own time (SQLite may remove the -wal and -shm files then).
  afterEach(() => rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));

  /** A WAL-mode file with a table of 16 KiB rows. */
  function open(file: string) {
    const db = new SQLite(file);
    db.pragma("page_size = 16384");
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("busy_timeout = 5000");
    db.exec("create table if not exists checkpoint_rows (id integer primary key, body blob not null)");
    return db;
  }
  const insert = (db: SQLite.Database, rows: number) => {
    const statement = db.prepare("insert into checkpoint_rows (body) values (?)");
    db.transaction(() => {
      for (let i = 0; i < rows; i++) statement.run(Buffer.alloc(16_000, i));
    })();
  };

  it("a database opened on a file checkpoints on the thread: its commits do not, the WAL is copied and starts over", async function () {
    const file = path.join(dir, "market.sqlite");
    const db = createDatabase({ sqlitePath: file });
    try {
      await migrateToLatest(db);
      const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db);
      // Only the safety net: SQLite's own checkpoint far past its default 1,000 pages.
      expect(rows[0]!.wal_autocheckpoint).to.equal(RESTART_PAGES * WRITER_LIMIT_FACTOR);
      const thread = checkpointerOf(path.resolve(file));
      expect(thread, "the file's checkpoint thread").to.not.equal(undefined);
      // 2,000 pages of writes: past SQLite's own 1,000, which a connection would have copied inside a commit.
      const writer = open(file);
      writer.pragma("wal_autocheckpoint = 0"); // the copy below is the thread's, not this writer's
      try {
        insert(writer, 2_000);
        const copied = await until(() => {
          const last = checkpointerOf(path.resolve(file))?.last;
          return last && last.log >= 2_000 && last.checkpointed === last.log ? last : undefined;
        }, "the WAL copied back");
        expect(copied.checkpointed).to.equal(copied.log);
        // The next write finds the WAL copied and starts it over: the thread's next figures are that write's pages.
        insert(writer, 5);
        const after = await until(() => {
          const last = checkpointerOf(path.resolve(file))?.last;
          return last && last.log < copied.log ? last : undefined;
        }, "the WAL started over");
        expect(after.log).to.be.below(50);
      } finally {
        writer.close();
      }
    } finally {
      await db.destroy();
    }
    expect(checkpointerOf(path.resolve(file)), "the thread ends with the file's last connection").to.equal(undefined);
  });

  /** Commits 60 transactions of 50 pages back to back, a millisecond apart; returns the WAL's largest extent. */
  async function writeBackToBack(db: SQLite.Database, file: string): Promise<{ written: number; walPages: number }> {
    let written = 0;
    for (let i = 0; i < 60; i++) {
      insert(db, 50);
      written += 50;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    // The WAL file never shrinks: its size is the most the WAL held (a frame is a page and a 24-byte header).
    return { written, walPages: (statSync(`${file}-wal`).size - 32) / (16_384 + 24) };
  }

  it("a writer committing back to back keeps its WAL within the bound, not grown without end", async function () {
    const file = path.join(dir, "busy.sqlite");
    const db = open(file);
    const release = checkpointInBackground(db, file, { everyMs: 10, restartPages: 100 });
    try {
      expect(db.pragma("wal_autocheckpoint", { simple: true })).to.equal(100 * WRITER_LIMIT_FACTOR);
      const { written, walPages } = await writeBackToBack(db, file);
      // Without checkpoints every page written stays in the WAL (about one a row here).
      expect(walPages, "the WAL's largest extent, in pages").to.be.below(written / 3);
    } finally {
      release();
      db.close();
    }
  });

  it("a thread that lags (a loaded machine): the writer's own checkpoint at twice the bound keeps the WAL bounded", async function () {
    const file = path.join(dir, "lagging.sqlite");
    const db = open(file);
    // The thread checkpoints once at start, then not for an hour: the writer alone.
    const release = checkpointInBackground(db, file, { everyMs: 3_600_000, restartPages: 100 });
    try {
      await until(() => checkpointerOf(file)?.last, "the thread's first checkpoint");
      const { written, walPages } = await writeBackToBack(db, file);
      // The bound, plus the transaction that crossed it (50 rows and the b-tree pages they touch). Without the net:
      // every page, about 3,000.
      expect(walPages, "the WAL's largest extent, in pages").to.be.at.most(100 * WRITER_LIMIT_FACTOR + 100);
      expect(written).to.equal(3_000);
    } finally {
      release();
      db.close();
    }
  });

  it("a thread that dies gives the connections SQLite's own checkpoints back", async function () {
    const file = path.join(dir, "dies.sqlite");
    const db = open(file);
    const release = checkpointInBackground(db, file);
    try {
      expect(db.pragma("wal_autocheckpoint", { simple: true })).to.equal(RESTART_PAGES * WRITER_LIMIT_FACTOR);
      await checkpointerOf(file)!.worker.terminate();
      await until(() => (db.pragma("wal_autocheckpoint", { simple: true }) === 1_000 ? true : undefined), "autocheckpoint back");
      expect(checkpointerOf(file)).to.equal(undefined);
      // A new connection of the file starts a new thread.
      const other = open(file);
      const releaseOther = checkpointInBackground(other, file);
      expect(checkpointerOf(file)).to.not.equal(undefined);
      releaseOther();
      other.close();
    } finally {
      release();
      db.close();
    }
  });
});

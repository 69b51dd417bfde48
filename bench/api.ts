/**
 * HTTP benchmark of the API on loopback: SQLite file (WAL) seeded with 100,000 open listed tasks, then autocannon
 * (10 connections, its own worker thread) against
 *   (a) GET /api/v1/a2a/tasks (anonymous browse; every answer must carry 100 tasks), and
 *   (b) GET /api/v1/api-keys/whoami with X-API-Key (a small authenticated read).
 * Extras: browse with a capabilities query and a key. Writes bench/api.json and prints a table; stops by itself.
 *   npm run bench:api            (BENCH_SECONDS=10, BENCH_TASKS=100000 by default)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import SQLite from "better-sqlite3";
import type { Insertable } from "kysely";
import { CONNECTIONS, loadRoute, serveBenchApi, type LoadRun } from "./lib/api-load";
import { calibrated, machineFigures } from "./lib/machine";
import { createDatabase, migrateToLatest } from "../server/db";
import type { EscrowTasksTable, ListingCapabilitiesTable, ListingsTable } from "../server/db/schema";
import { CAPABILITY_TAGS } from "@market/core/capabilities";
import { publicTaskHash } from "@market/core/crypto";
import { EscrowStatus, Ending } from "@market/core/escrow";

const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const BARS = { browseReqPerSec: 1_500, browseP99Ms: 25 };
const TOKEN = "0x3600000000000000000000000000000000000000";
const POSTERS = Array.from({ length: 50 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`);

/** A third of the tasks require two capability tags; 1% are pinned to one agent. */
const tagsOf = (i: number) => (i % 3 === 0 ? [CAPABILITY_TAGS[i % CAPABILITY_TAGS.length]!, CAPABILITY_TAGS[(i + 7) % CAPABILITY_TAGS.length]!] : []);
const isPinned = (i: number) => i % 100 === 50;

/** Inserts rows through one prepared statement per table, in transactions of `chunk` rows. */
function insertAll<T extends object>(sqlite: SQLite.Database, table: string, rows: Iterable<T>, chunk = 10_000): number {
  let statement: SQLite.Statement | undefined;
  let batch: T[] = [];
  let count = 0;
  const flush = sqlite.transaction((items: T[]) => {
    for (const item of items) statement!.run(item);
  });
  for (const row of rows) {
    if (!statement) {
      const columns = Object.keys(row);
      statement = sqlite.prepare(`insert into ${table} (${columns.join(", ")}) values (${columns.map((c) => `@${c}`).join(", ")})`);
    }
    batch.push(row);
    if (batch.length === chunk) {
      flush(batch);
      count += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) flush(batch);
  return count + batch.length;
}

/** 100,000 funded, listed public tasks (a third require capabilities, 1% pinned), listed a second apart. */
function seed(file: string, nowMs: number): void {
  const sqlite = new SQLite(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = OFF");
  const deadline = Math.floor(nowMs / 1000) + 30 * 86_400;
  const hashes: string[] = [];
  const briefOf = (i: number) =>
    `Task ${i}: summarise the attached quarterly report in five bullet points, citing page numbers, and flag any figure ` +
    `that changed by more than ten percent against the previous quarter. Keep it under two hundred words.`;
  for (let i = 0; i < TASKS; i++) hashes.push(publicTaskHash(briefOf(i)));

  function* listings(): Generator<Insertable<ListingsTable>> {
    for (let i = 0; i < TASKS; i++) {
      yield {
        task_hash: hashes[i]!,
        chain: "arc",
        poster: POSTERS[i % POSTERS.length]!,
        privacy: "public",
        public_brief: briefOf(i),
        routing_summary: null,
        root_hash: null,
        verification_mode: "auto",
        verification_criteria: JSON.stringify({ min_length: 50, contains_keywords: ["quarter"], pass_threshold: 60 }),
        required_capabilities: JSON.stringify(tagsOf(i)),
        location_zone: "global",
        target_executor: isPinned(i) ? POSTERS[0]! : null,
        target_executor_type: isPinned(i) ? "agent" : null,
        service_id: null,
        verifier_address: null,
        key_custody_blob: null,
        token: TOKEN,
        funding_tx: `0x${(i + 1).toString(16).padStart(64, "0")}`,
        listed_at: nowMs - (TASKS - i) * 1000,
      };
    }
  }
  function* capabilities(): Generator<Insertable<ListingCapabilitiesTable>> {
    for (let i = 0; i < TASKS; i++) for (const tag of tagsOf(i)) yield { task_hash: hashes[i]!, tag };
  }
  function* escrowTasks(): Generator<Insertable<EscrowTasksTable>> {
    for (let i = 0; i < TASKS; i++) {
      yield {
        chain: "arc",
        task_hash: hashes[i]!,
        poster: POSTERS[i % POSTERS.length]!,
        token: TOKEN,
        amount: String(1_000_000 + (i % 1000) * 1000),
        verifier: null,
        worker: null,
        deadline,
        status: EscrowStatus.Funded,
        rounds: 0,
        ending: Ending.None,
        result_hash: null,
        phase_at: null,
        last_score: null,
        payout: null,
        fee: null,
        created_block: 1 + Math.floor(i / 20),
        created_tx: `0x${(i + 1).toString(16).padStart(64, "0")}`,
        updated_block: 1 + Math.floor(i / 20),
      };
    }
  }
  insertAll(sqlite, "listings", listings());
  insertAll(sqlite, "listing_capabilities", capabilities());
  insertAll(sqlite, "escrow_tasks", escrowTasks());
  sqlite.pragma("wal_checkpoint(TRUNCATE)");
  sqlite.close();
}

type Run = LoadRun;

async function main() {
  const dir = mkdtempSync(path.join(tmpdir(), "market-bench-api-"));
  const file = path.join(dir, "market.sqlite");
  const nowMs = Date.now();
  const db = createDatabase({ sqlitePath: file });
  await migrateToLatest(db);

  const seedStarted = performance.now();
  seed(file, nowMs);
  const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;

  const { app, key, base } = await serveBenchApi(db, { dir, token: TOKEN, wallet: POSTERS[0]! });

  try {
    // Every answer is checked in full once before the load (the load only counts tasks per answer).
    const sample = (await (await fetch(`${base}/api/v1/a2a/tasks`)).json()) as {
      data: { tasks: Array<{ state: { status: string } }>; total: number };
    };
    let openUnpinned = 0;
    for (let i = 0; i < TASKS; i++) if (!isPinned(i) && tagsOf(i).length === 0) openUnpinned++;
    if (sample.data.tasks.length !== 100 || sample.data.tasks.some((t) => t.state.status !== "open"))
      throw new Error("browse did not answer 100 open tasks");
    if (sample.data.total !== openUnpinned) throw new Error(`browse total ${sample.data.total}, expected ${openUnpinned}`);
    const whoami = (await (await fetch(`${base}/api/v1/api-keys/whoami`, { headers: { "x-api-key": key } })).json()) as {
      data: { addresses: string[] };
    };
    if (whoami.data.addresses[0] !== POSTERS[0]) throw new Error("whoami answered another wallet");
    const bodyBytes = (await (await fetch(`${base}/api/v1/a2a/tasks`)).arrayBuffer()).byteLength;

    await loadRoute(`${base}/api/v1/a2a/tasks`, {}, 2); // warm-up (JIT, SQLite page cache)
    const machine = machineFigures();
    const browse = await loadRoute(`${base}/api/v1/a2a/tasks`, {}, SECONDS);
    const read = await loadRoute(`${base}/api/v1/api-keys/whoami`, { "x-api-key": key }, SECONDS);
    const browseFiltered = await loadRoute(
      `${base}/api/v1/a2a/tasks?capabilities=web_research,summarization,translation`,
      { "x-api-key": key },
      Math.max(3, SECONDS / 2),
    );

    const report = {
      browseReqPerSec: browse.reqPerSec,
      browseP99Ms: browse.p99Ms,
      readReqPerSec: read.reqPerSec,
      readP99Ms: read.p99Ms,
      browse,
      read,
      browseWithCapabilitiesAndKey: browseFiltered,
      loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
      // Other work on the machine skews the figures: the 1-minute load average when the runs ended says how much.
      setup: {
        tasks: TASKS,
        seedSeconds,
        browseBodyBytes: bodyBytes,
        connections: CONNECTIONS,
        seconds: SECONDS,
        cpus: cpus().length,
        loadAverage: Math.round(loadavg()[0]! * 10) / 10,
        node: process.version,
      },
      bars: BARS,
      meetsBars: browse.reqPerSec >= BARS.browseReqPerSec && browse.p99Ms <= BARS.browseP99Ms,
      // The machine's calibration and the main figures divided by it (bench/lib/machine.ts).
      machine,
      perCalibration: calibrated(
        {
          browseReqPerSec: { value: browse.reqPerSec, kind: "rate" },
          browseP99Ms: { value: browse.p99Ms, kind: "duration" },
          readReqPerSec: { value: read.reqPerSec, kind: "rate" },
          readP99Ms: { value: read.p99Ms, kind: "duration" },
        },
        machine,
      ),
    };
    writeFileSync(path.join(__dirname, "api.json"), `${JSON.stringify(report, null, 2)}\n`);

    const row = (name: string, r: Run) =>
      `${name.padEnd(34)}${String(r.reqPerSec).padStart(9)}${String(r.p50Ms).padStart(8)}${String(r.p99Ms).padStart(8)}${String(r.maxMs).padStart(8)}${String(r.mbPerSec).padStart(8)}${String(r.non2xx + r.mismatches + r.errors + r.timeouts).padStart(7)}`;
    console.log(
      `\nAPI benchmark: ${TASKS.toLocaleString("en")} open tasks seeded in ${seedSeconds} s, ${CONNECTIONS} connections, ${SECONDS} s per run, ` +
        `load average ${report.setup.loadAverage} on ${report.setup.cpus} CPUs`,
    );
    console.log(
      `${"route".padEnd(34)}${"req/s".padStart(9)}${"p50 ms".padStart(8)}${"p99 ms".padStart(8)}${"max ms".padStart(8)}${"MB/s".padStart(8)}${"bad".padStart(7)}`,
    );
    console.log(row("GET /api/v1/a2a/tasks", browse));
    console.log(row("GET /api/v1/api-keys/whoami (key)", read));
    console.log(row("GET /a2a/tasks?capabilities (key)", browseFiltered));
    console.log(
      `browse bar (>= ${BARS.browseReqPerSec} req/s, p99 <= ${BARS.browseP99Ms} ms): ${report.meetsBars ? "met" : "MISSED"}; written to bench/api.json`,
    );
    for (const [name, r] of Object.entries({ browse, read, browseFiltered })) {
      if (r.non2xx + r.mismatches + r.errors + r.timeouts > 0)
        throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.mismatches} wrong bodies, ${r.errors} errors`);
    }
  } finally {
    await app.close();
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

/**
 * The web app's budgets (issue 28): the JavaScript a first visit downloads (gzipped, as a compressing proxy or CDN
 * would send it), and the time from navigation to the first page of tasks drawn, with 100,000 listed tasks in the
 * database (PostgreSQL, bench/lib/postgres.ts; the tasks of bench/lib/browse-seed.ts). Debian's chromium drives the
 * built app (web/dist) served by the API's server on loopback; each visit is a new browser context (cold cache).
 * Also the bulk page's check of a 1,000-row CSV in the browser (core/bulk with the web rules, web/src/bulk/check.ts):
 * from the file given to the page until its checked rows are drawn (nothing is sent; the page needs a session in
 * localStorage only to show itself).
 * Writes bench/web.json with the load average and the machine's calibration (bench/lib/machine.ts). Stops by itself.
 *   npm run bench:web            (BENCH_TASKS=100000, BENCH_VISITS=7 by default)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { serveBenchApi } from "./lib/api-load";
import { createDatabase, migrateToLatest } from "../server/db";
import { WEB_DIST, webBuilt } from "../server/web";
import { startBenchPostgres } from "./lib/postgres";
import { calibrated, machineFigures } from "./lib/machine";
import { SEED_TOKEN as TOKEN, seedBrowseTasks, seedPoster } from "./lib/browse-seed";

const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const VISITS = Number(process.env.BENCH_VISITS ?? 7);
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** Budgets: first-load JavaScript (gzipped) and the median time to the first page of tasks. */
const BARS = { firstLoadJsGzipKb: 200, firstTasksPageMedianMs: 1500 };
/** Rows of the bulk check's file (the web app's limit per run) and how many times it is checked. */
const BULK_ROWS = 1_000;
const BULK_CHECKS = 5;

/** A 1,000-row task file: public and private rows, a few tags, one unknown column (ignored). */
function bulkCsv(rows: number): string {
  const lines = ["instructions,reward,privacy,capabilities,duration,notes"];
  for (let i = 0; i < rows; i++) {
    const brief = `Summarise report number ${i} of the harbour authority in five sentences, naming its main figures.`;
    lines.push(`${brief},${1 + (i % 5)}.25,${i % 3 === 0 ? "private" : "public"},summarization;translation,86400,row ${i}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Milliseconds from the file given to the bulk page until its checked rows are drawn, per check. */
async function bulkChecks(browser: import("playwright-core").Browser, base: string): Promise<number[]> {
  const csv = Buffer.from(bulkCsv(BULK_ROWS));
  const session = { token: "bench", address: seedPoster(0), expiresAt: Date.now() + 3_600_000 };
  const times: number[] = [];
  for (let i = 0; i < BULK_CHECKS; i++) {
    const context = await browser.newContext();
    await context.addInitScript(`window.localStorage.setItem("market.session", ${JSON.stringify(JSON.stringify(session))})`);
    const page = await context.newPage();
    await page.goto(`${base}/post/bulk`);
    const input = page.locator('input[type="file"]');
    await input.waitFor({ timeout: 60_000 });
    const started = performance.now();
    await input.setInputFiles({ name: "tasks.csv", mimeType: "text/csv", buffer: csv });
    await page.locator(`[data-testid="rows"] tbody tr:nth-child(${BULK_ROWS})`).waitFor({ timeout: 60_000 });
    times.push(Math.round(performance.now() - started));
    const drawn = await page.locator('[data-testid="rows"] tbody tr').count();
    if (drawn !== BULK_ROWS) throw new Error(`the bulk page drew ${drawn} rows, not ${BULK_ROWS}`);
    await context.close();
  }
  return times;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  if (!webBuilt()) throw new Error(`the web app is not built (${WEB_DIST}): run npm run build`);
  const pg = await startBenchPostgres();
  if (!pg) throw new Error("PostgreSQL server binaries not found (apt-get install postgresql), or set BENCH_DATABASE_URL");
  const dir = mkdtempSync(path.join(tmpdir(), "market-bench-web-"));
  const db = createDatabase({ databaseUrl: pg.url });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
  try {
    await migrateToLatest(db);
    const seedStarted = performance.now();
    await seedBrowseTasks(db, TASKS, Date.now());
    const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;
    const { app, base } = await serveBenchApi(db, { dir, token: TOKEN, wallet: seedPoster(0), web: { root: WEB_DIST } });
    try {
      const machine = machineFigures();
      const visits: Array<{ firstTasksPageMs: number; jsBytes: number; jsGzipBytes: number; rows: number }> = [];
      for (let i = 0; i < VISITS; i++) {
        const context = await browser.newContext();
        const page = await context.newPage();
        const scripts: Promise<Buffer>[] = [];
        page.on("response", (response) => {
          if (response.request().resourceType() === "script") scripts.push(response.body());
        });
        const started = performance.now();
        await page.goto(`${base}/tasks`);
        await page.locator("table.list tbody tr").first().waitFor({ timeout: 60_000 });
        const firstTasksPageMs = Math.round(performance.now() - started);
        const rows = await page.locator("table.list tbody tr").count();
        if (rows !== 50) throw new Error(`the first page drew ${rows} tasks, not 50`);
        const bodies = await Promise.all(scripts);
        visits.push({
          firstTasksPageMs,
          rows,
          jsBytes: bodies.reduce((sum, b) => sum + b.length, 0),
          jsGzipBytes: bodies.reduce((sum, b) => sum + gzipSync(b, { level: 9 }).length, 0),
        });
        await context.close();
      }
      const firstLoadJsGzipKb = Math.round(visits[0]!.jsGzipBytes / 102.4) / 10;
      const firstTasksPageMedianMs = median(visits.map((v) => v.firstTasksPageMs));
      const bulkCheckMs = await bulkChecks(browser, base);
      const bulkCheck1000RowsMedianMs = median(bulkCheckMs);
      const report = {
        tasks: TASKS,
        database: `PostgreSQL ${pg.version}`,
        seedSeconds,
        firstLoadJsGzipKb,
        firstLoadJsKb: Math.round(visits[0]!.jsBytes / 102.4) / 10,
        firstTasksPageMedianMs,
        firstTasksPageMs: visits.map((v) => v.firstTasksPageMs),
        bulkCheck1000RowsMedianMs,
        bulkCheckMs,
        note: "Each visit is a new browser context (nothing cached): navigation to /tasks until its first page (50 tasks, GET /api/v1/tasks) is drawn. The API serves uncompressed; the gzip figure is what a compressing proxy sends. bulkCheck: a 1,000-row CSV given to /post/bulk until its checked rows are drawn (checked in the page, nothing sent), each in a new context.",
        bars: BARS,
        meetsBars: firstLoadJsGzipKb <= BARS.firstLoadJsGzipKb && firstTasksPageMedianMs <= BARS.firstTasksPageMedianMs,
        machine,
        perCalibration: calibrated(
          {
            firstTasksPageMedianMs: { value: firstTasksPageMedianMs, kind: "duration" },
            bulkCheck1000RowsMedianMs: { value: bulkCheck1000RowsMedianMs, kind: "duration" },
          },
          machine,
        ),
      };
      writeFileSync(path.join(__dirname, "web.json"), `${JSON.stringify(report, null, 2)}\n`);
      console.log(JSON.stringify(report, null, 2));
    } finally {
      await app.close();
    }
  } finally {
    await browser.close();
    await db.destroy();
    pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

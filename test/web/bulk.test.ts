/**
 * Bulk posting in a real browser (issue 28, item 4): sign in with the injected wallet, drop a 6-row CSV with one bad
 * row, one unknown column and one duplicate (flagged as the spec's web rules say, before anything is sent), confirm the
 * totals once, watch the progress bar, see the tasks listed; a reload in the middle of the run (a funding mined, the
 * page gone before it heard the hash) and the same file dropped again finishes the run without a second payment, the
 * balances checked on chain; a second tab cannot post a run the first is posting (the Web Locks lock); a worker takes
 * a task and is paid. axe-core check and screenshots of the page.
 */
import { expect } from "chai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { WorkerRuntime, type RuntimeEvent } from "../../sdk/src/runtime";
import { stackFixture, type Stack } from "../support/stack";
import { privateKeyOf } from "../server/harness";
import { collectPageErrors, freePort, launchBrowser, screenshot, seriousAccessibilityViolations, walletContext } from "./harness";

const CUSTODY_KEY = `0x${"42".repeat(32)}`;

// Six rows: four postable (three public, one private), an unknown column `notes`, line 5 a bad capability tag, line 6
// identical to line 2. Each funding carries one task (the page's "Tasks per funding" set to 1).
const CSV = [
  "instructions,reward,privacy,capabilities,notes",
  "Summarise the public history of the Kiel canal in five sentences.,2,public,summarization,first",
  "Translate 'the harbour opens at dawn' into French.,1.5,public,translation,second",
  "Summarise this confidential memo about the Q3 plan.,3,private,summarization,third",
  "Teleport this parcel to the moon.,1,public,teleportation,bad",
  "Summarise the public history of the Kiel canal in five sentences.,2,public,summarization,first",
  "\"Translate 'good evening, captain' into Spanish.\",2.5,public,translation,sixth",
].join("\n");
const TOTAL_RAW = 9_000_000n; // 2 + 1.5 + 3 + 2.5 USDC

const until = async (check: () => boolean | Promise<boolean>, ms: number, what: string) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe("web: bulk posting in chromium", function () {
  this.timeout(240_000);
  let browser: Browser;
  let s: Stack;
  let page: Page;
  let errors: string[];
  /** Set by the test: the wallet reloads the page after this many sent transactions, before the page hears the hash. */
  let reloadAfter: number | undefined;
  let reloaded: Promise<void> | undefined;
  /** Set by a test: each transaction's answer to the page waits for it (a run held mid-way). */
  let gate: Promise<void> | undefined;
  let sentCount = 0;
  let context: BrowserContext;

  before(async function () {
    const port = await freePort(41100, 41199);
    const fixture = stackFixture(
      async (server) => {
        // A registered agent with a public key and both tags: the private row has someone to be wrapped to.
        await server.registerAgent(server.worker, ["summarization", "translation"]);
        return { workerKey: await server.apiKeyFor(server.worker) };
      },
      { web: true, publicUrl: `http://127.0.0.1:${port}`, custodyKey: CUSTODY_KEY },
    );
    let seeded: { workerKey: string };
    ({ stack: s, seeded } = await fixture());
    workerKey = seeded.workerKey;
    browser = await launchBrowser();
    const wallet = { privateKey: privateKeyOf(s.poster), rpcUrl: s.rpcUrl, chainId: s.chainConfig.chainId };
    ({ context } = await walletContext(browser, wallet, async (_hash, sent) => {
      sentCount = sent;
      await gate;
      if (sent !== reloadAfter) return;
      reloadAfter = undefined;
      // The transaction is mined; the page reloads before it hears the hash (as a closed tab would).
      reloaded = page.reload().then(() => undefined);
      await new Promise(() => undefined);
    }));
    page = await context.newPage();
    errors = collectPageErrors(page);
  });
  let workerKey: string;
  after(async function () {
    await browser?.close();
    await s?.close();
  });

  const balanceOf = (address: string) => s.usdc.balanceOf(address);
  const tasksCreated = async () => (await s.escrow.queryFilter(s.escrow.filters.TaskCreated(undefined, s.poster.address))).length;

  const drop = async () => {
    await page.locator('input[type="file"]').setInputFiles({ name: "tasks.csv", mimeType: "text/csv", buffer: Buffer.from(CSV) });
    await page.getByTestId("totals").waitFor();
  };

  it("flags bad rows in place, ignores the unknown column, refuses the duplicate, and posts the rest once across a reload", async function () {
    await page.goto(`${s.apiUrl}/post/bulk`);
    await page.locator("#main").getByRole("button", { name: "Sign in with wallet" }).click();
    await page.getByRole("heading", { name: "Post tasks in bulk" }).waitFor();
    await drop();

    // Checked in the page before anything is sent: the flags, the ignored column, the totals.
    expect(await page.getByTestId("ignored-columns").textContent()).to.contain('"notes"');
    const flagged = page.locator("tr.flagged");
    expect(await flagged.allTextContents()).to.have.length(2);
    expect(await page.locator('tr[data-line="5"]').textContent()).to.match(/INVALID_CAPABILITY.*unknown capability tag: teleportation/);
    expect(await page.locator('tr[data-line="6"]').textContent()).to.match(/DUPLICATE_ROW.*identical to line 2/);
    const totals = (await page.getByTestId("totals").textContent()) ?? "";
    expect(totals).to.contain("Tasks to post: 4 (public 3, private 1); 2 flagged rows left out");
    expect(totals).to.contain("Total escrow: 9 USDC");
    await page.getByLabel("Tasks per funding").fill("1");
    expect(await page.getByTestId("totals").textContent()).to.contain("Transactions: up to 5 (1 approval + 4 fundings");
    await screenshot(page, "bulk-checked");
    const violations = await seriousAccessibilityViolations(page);
    expect(violations, JSON.stringify(violations, null, 1)).to.deep.equal([]);
    expect(await tasksCreated()).to.equal(0);

    const posterBefore = await balanceOf(s.poster.address);
    const escrowBefore = await balanceOf(s.escrowAddress);
    // The third transaction (the approval unless the allowance covers the total, then fundings) is mined, and the tab
    // is reloaded before the page hears its hash.
    reloadAfter = 3;
    await page.getByRole("button", { name: "Pay 9 USDC into escrow for 4 tasks" }).click();
    await page.getByTestId("progress").waitFor();
    await until(() => reloaded !== undefined, 60_000, "the reload mid-run");
    await reloaded;
    // Mid-run: some fundings mined (the last one unheard by the page), rows left.
    const createdBeforeReload = await tasksCreated();
    expect(createdBeforeReload).to.be.within(2, 3);

    // After the reload: the browser remembers the run; the same file finishes it.
    await page.getByTestId("saved-runs").waitFor();
    expect(await page.getByTestId("saved-runs").textContent()).to.contain("tasks.csv");
    await drop();
    await page.getByText("This file was started in this browser").waitFor();
    await page.getByLabel("Tasks per funding").fill("1");
    await page.getByRole("button", { name: /^Pay .* USDC into escrow for 4 tasks$/ }).click();
    await page.getByTestId("run-done").waitFor({ timeout: 90_000 });
    expect(await page.getByTestId("run-done").textContent()).to.contain("Every row is done.");
    expect(await page.locator("td", { hasText: /^posted/ }).count()).to.equal(4);
    const progress = page.getByTestId("progress");
    expect(await progress.getAttribute("value")).to.equal(await progress.getAttribute("max"));
    await screenshot(page, "bulk-posted");

    // On chain: four tasks, paid once each.
    expect(await tasksCreated()).to.equal(4);
    expect(posterBefore - (await balanceOf(s.poster.address))).to.equal(TOTAL_RAW);
    expect((await balanceOf(s.escrowAddress)) - escrowBefore).to.equal(TOTAL_RAW);
    // The private brief carries a custody copy of its key; the public ones none.
    const listings = await s.db.selectFrom("listings").select(["privacy", "key_custody_blob"]).execute();
    expect(listings.filter((l) => l.privacy === "private").map((l) => l.key_custody_blob !== null)).to.deep.equal([true]);
    expect(listings.filter((l) => l.privacy === "public" && l.key_custody_blob !== null)).to.have.length(0);

    // The results download in the CLI's results-file columns.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download the results (CSV)" }).click()]);
    const stream = await download.createReadStream();
    let csv = "";
    for await (const chunk of stream) csv += String(chunk);
    const [header, ...lines] = csv.trim().split(/\r?\n/);
    expect(header).to.equal("line,status,escrow,task_id,task_hash,tx_hash,error");
    expect(lines.map((l) => l.split(",").slice(0, 2).join(","))).to.deep.equal(["2,posted", "3,posted", "4,posted", "7,posted"]);
    expect(errors.filter((e) => /Content.Security.Policy|Refused to/i.test(e))).to.deep.equal([]);
  });

  it("refuses to post a run another tab is posting (RUN_IN_PROGRESS), and that tab finishes it", async function () {
    const file = {
      name: "more.csv",
      mimeType: "text/csv",
      buffer: Buffer.from("instructions,reward,privacy\nSummarise the harbour's winter schedule.,1,public\nList the harbour's berths.,1,public\n"),
    };
    await page.goto(`${s.apiUrl}/post/bulk`);
    await page.locator('input[type="file"]').setInputFiles(file);
    let release!: () => void;
    gate = new Promise<void>((resolve) => (release = resolve));
    const before = sentCount;
    await page.getByRole("button", { name: "Pay 2 USDC into escrow for 2 tasks" }).click();
    await until(() => sentCount > before, 30_000, "the first tab's first transaction");

    const other = await context.newPage();
    await other.goto(`${s.apiUrl}/post/bulk`);
    await other.locator('input[type="file"]').setInputFiles(file);
    await other.getByRole("button", { name: "Pay 2 USDC into escrow for 2 tasks" }).click();
    await other.getByRole("alert").waitFor();
    expect(await other.getByRole("alert").textContent()).to.contain("RUN_IN_PROGRESS");

    release();
    gate = undefined;
    await page.getByTestId("run-done").waitFor({ timeout: 60_000 });
    expect(await page.getByTestId("run-done").textContent()).to.contain("Every row is done.");
    await other.close();
  });

  it("a worker takes one of the posted tasks and is paid", async function () {
    const events: RuntimeEvent[] = [];
    const workerBefore = await balanceOf(s.worker.address);
    const runtime = new WorkerRuntime({
      ...(await s.runtimeOptions(s.worker, workerKey)),
      capabilities: ["translation"],
      browseIntervalMs: 200,
      maxConcurrentTasks: 1,
      executeTask: async () => ({ output: "Le port ouvre à l'aube : a careful translation, with nothing else added." }),
    }).on((event) => events.push(event));
    await runtime.start();
    try {
      await until(() => events.some((e) => e.type === "task_finalized"), 60_000, "a task delivered and verified");
    } finally {
      await runtime.stop();
    }
    expect((await balanceOf(s.worker.address)) > workerBefore).to.equal(true);
  });
});

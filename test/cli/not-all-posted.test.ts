/**
 * A run whose listings fail after funding (the API refuses them through a proxy in front of it): NOT_ALL_POSTED,
 * `paid, not listed` rows in the results file, then finish-posts lists them without paying again, and the same
 * post-tasks command posts the rest.
 */
import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, readResults, runCli, taskDir } from "../support/cli";
import type { TaskView } from "../../sdk/src/client";

/** Forwards everything to the API, except listings while `refuseListings` is set (answered 503). */
async function listingProxy(target: string) {
  const upstream = new URL(target);
  const state = { refuseListings: false };
  const server = http.createServer((req, res) => {
    if (state.refuseListings && req.method === "POST" && req.url === "/api/v1/a2a/tasks/index") {
      req.resume();
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ success: false, error: { code: "NOT_READY", message: "The service is not ready." } }));
      return;
    }
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const FIVE_ROWS = [
  "instructions,amount,privacy",
  "List three rivers of Europe.,1000000,public",
  "Summarise my private notes.,2000000,private",
  "List three mountains of Asia.,3000000,public",
  "Translate my private letter.,4000000,private",
  "List three lakes of Africa.,5000000,public",
].join("\n");

/** The worker registered (no tags), the poster's API key. */
const seededStack = stackFixture(async (s) => {
  await s.registerAgent(s.worker, []);
  return { posterKey: await s.apiKeyFor(s.poster) };
});

describe("cli: NOT_ALL_POSTED and finish-posts", function () {
  let s: Stack;
  let posterKey: string;
  let proxy: Awaited<ReturnType<typeof listingProxy>>;

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({
      stack: s,
      seeded: { posterKey },
    } = await seededStack());
    proxy = await listingProxy(s.apiUrl);
  });
  afterEach(async function () {
    await proxy.close();
    await s.close();
  });

  it("a listing refused after funding stops the run: rows paid and not listed, finished by finish-posts without paying again", async function () {
    const dir = taskDir({ "tasks.csv": FIVE_ROWS });
    const env = await cliEnv(s, s.poster, { apiKey: posterKey, extra: { MARKET_API_URL: proxy.url } });
    const balances = async () => ({ poster: await s.usdc.balanceOf(s.poster.address), escrow: await s.usdc.balanceOf(s.escrowAddress) });
    const initial = await balances();
    const command = ["post-tasks", "--file", "tasks.csv", "--chunk", "2", "--yes"];

    proxy.state.refuseListings = true;
    const stopped = await runCli(command, { env, cwd: dir });
    expect(stopped.status).to.equal(3);
    expect(stopped.stderr).to.contain("error NOT_ALL_POSTED: 5 of 5 rows are not posted. Rerun the same command");
    expect(stopped.stderr).to.contain("market post-tasks --file tasks.csv --chunk 2 --yes");
    const results = path.join(dir, "tasks.csv.results.csv");
    let rows = readResults(results);
    expect(rows.map((r) => [r.line, r.status, r.error])).to.deep.equal([
      ["2", "paid, not listed", "NOT_READY: The service is not ready."],
      ["3", "paid, not listed", "NOT_READY: The service is not ready."],
      ["4", "not started", ""],
      ["5", "not started", ""],
      ["6", "not started", ""],
    ]);
    expect(rows[0]!.tx_hash)
      .to.match(/^0x[0-9a-f]{64}$/)
      .and.equal(rows[1]!.tx_hash);
    expect(rows[0]!.task_id).to.equal(rows[0]!.task_hash);
    const paid = await balances();
    expect(initial.poster - paid.poster).to.equal(3_000_000n);
    expect(paid.escrow - initial.escrow).to.equal(3_000_000n);

    // finish-posts still refused: nothing more is paid, the rows stay paid and not listed.
    const refused = await runCli(["finish-posts", "--file", "tasks.csv"], { env, cwd: dir });
    expect(refused.status).to.equal(3);
    expect(refused.stderr).to.contain("error NOT_ALL_POSTED");
    expect(await balances()).to.deep.equal(paid);

    proxy.state.refuseListings = false;
    const finished = await runCli(["finish-posts", "--file", "tasks.csv"], { env, cwd: dir });
    expect(finished.status, finished.stderr).to.equal(0);
    expect(finished.stdout).to.contain("paid by an earlier run, to be listed: 2");
    expect(finished.stdout).to.contain("5 rows: posted 2; paid, not listed 0; failed, nothing paid 0; not started 3");
    expect(finished.stdout).to.contain("3 row(s) were never paid for; post them with: market post-tasks --file tasks.csv");
    expect(await balances()).to.deep.equal(paid, "finishing pays nothing");
    rows = readResults(results);
    expect(rows.map((r) => r.status)).to.deep.equal(["posted", "posted", "not started", "not started", "not started"]);

    const rerun = await runCli(command, { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(0);
    expect(rerun.stdout).to.contain("already posted by an earlier run: 2");
    expect(readResults(results).map((r) => r.status)).to.deep.equal(Array(5).fill("posted"));
    const done = await balances();
    expect(initial.poster - done.poster).to.equal(15_000_000n);
    expect(done.escrow - initial.escrow).to.equal(15_000_000n);
    await s.sync();
    const { tasks } = (await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: env.MARKET_API_KEY })).body.data;
    expect(tasks.map((t) => t.meta.taskHash).sort()).to.deep.equal(
      readResults(results)
        .map((r) => r.task_hash)
        .sort(),
    );
  });

  it("a rerun with every row posted pays nothing and says so", async function () {
    const dir = taskDir({ "tasks.csv": FIVE_ROWS });
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const first = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env, cwd: dir });
    expect(first.status, first.stderr).to.equal(0);
    const paid = await s.usdc.balanceOf(s.poster.address);
    const again = await runCli(["post-tasks", "--file", "tasks.csv"], { env, cwd: dir });
    expect(again.status, again.stderr).to.equal(0);
    expect(again.stdout).to.contain("already posted by an earlier run: 5");
    expect(again.stdout).to.contain("tasks to post: 0");
    expect(await s.usdc.balanceOf(s.poster.address)).to.equal(paid);

    const otherWallet = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env: await cliEnv(s, s.stranger), cwd: dir });
    expect(otherWallet.status).to.equal(1);
    expect(otherWallet.stderr).to.match(new RegExp(`^error JOURNAL_MISMATCH: The journal records fundings by ${s.poster.address}`));
  });
});

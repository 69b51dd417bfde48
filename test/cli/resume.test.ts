/**
 * A post-tasks run killed with SIGKILL at the worst moments, then rerun with the same command: every row is posted
 * exactly once and paid exactly once. The kill lands in its window through a pause after
 * a journaled step (the command run by test/support/paused-cli.ts, with the embedding hook the `market` binary never
 * passes) or, for a funding sent but not mined, by turning the chain's automine off.
 */
import { expect } from "chai";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, readJournalEntries, readResults, runCli, startCli, taskDir, until } from "../support/cli";
import type { TaskView } from "../../sdk/src/client";

const SIX_ROWS = [
  "instructions,reward,privacy",
  "Public brief one: list three rivers.,1,public",
  "Private brief two: summarise my notes.,2,private",
  "Public brief three: list three mountains.,3,public",
  "Private brief four: translate my letter.,4,private",
  "Public brief five: list three lakes.,5,public",
  "Private brief six: check my sums.,6,private",
].join("\n");
const TOTAL = 21_000_000n;
const ARGS = ["post-tasks", "--file", "tasks.csv", "--chunk", "1", "--yes"];

/** The worker registered (no tags), the poster's API key. */
const seededStack = stackFixture(async (s) => {
  await s.registerAgent(s.worker, []);
  return { posterKey: await s.apiKeyFor(s.poster) };
});

describe("cli: a killed post-tasks run, rerun", function () {
  let s: Stack;
  let posterKey: string;
  let dir: string;
  let journal: string;
  let initial: { poster: bigint; escrow: bigint };

  const balances = async () => ({ poster: await s.usdc.balanceOf(s.poster.address), escrow: await s.usdc.balanceOf(s.escrowAddress) });
  const entries = (type: string) => readJournalEntries(journal).filter((e) => e.t === type);

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({
      stack: s,
      seeded: { posterKey },
    } = await seededStack());
    dir = taskDir({ "tasks.csv": SIX_ROWS });
    journal = path.join(dir, "tasks.csv.results.csv.journal.jsonl");
    initial = await balances();
  });
  afterEach(async function () {
    await hre.network.provider.send("evm_setAutomine", [true]);
    await s.close();
  });

  /** After the rerun: all six rows posted once, paid once, listed once. */
  async function expectAllPostedOnce() {
    const rows = readResults(path.join(dir, "tasks.csv.results.csv"));
    expect(rows.map((r) => [r.line, r.status, r.escrow])).to.deep.equal([
      ["2", "posted", "1"],
      ["3", "posted", "2"],
      ["4", "posted", "3"],
      ["5", "posted", "4"],
      ["6", "posted", "5"],
      ["7", "posted", "6"],
    ]);
    const after = await balances();
    expect(initial.poster - after.poster).to.equal(TOTAL);
    expect(after.escrow - initial.escrow).to.equal(TOTAL);
    await s.sync();
    const { tasks } = (await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: posterKey })).body.data;
    expect(tasks.map((t) => t.meta.taskHash).sort()).to.deep.equal(rows.map((r) => r.task_hash).sort());
    expect(tasks.map((t) => BigInt(t.meta.reward.amount)).reduce((a, b) => a + b, 0n)).to.equal(TOTAL);
    return rows;
  }

  it("killed after a funding is mined and before its listing: the rerun lists that row without paying again", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const killed = await killBeforeSecondListing(env);
    expect(entries("posted")).to.have.length(1);
    expect((await balances()).escrow - initial.escrow).to.equal(3_000_000n, "rows 1 and 2 are paid");

    const rerun = await runCli(ARGS, { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(0);
    expect(rerun.stdout).to.contain("already posted by an earlier run: 1");
    expect(rerun.stdout).to.contain("paid by an earlier run, to be listed (nothing to pay): 1");
    expect(rerun.stdout).to.contain("tasks to post: 4 (public 2, private 2)");
    expect(rerun.stdout).to.contain("total escrow: 18 USDC");
    const rows = await expectAllPostedOnce();
    expect(rows[1]!.task_hash).to.equal(killed.taskHash, "the private row keeps the task hash it was paid under");
  });

  /** Kills a run after the second funding (line 3, 2 USDC, private) is mined and before its listing; its task hash and funding. */
  async function killBeforeSecondListing(env: NodeJS.ProcessEnv) {
    const first = startCli(ARGS, { env, cwd: dir, pauseAfter: { step: "funded", ms: 1500 } });
    await until(() => entries("funded").length === 2, "the second funding");
    first.child.kill("SIGKILL");
    expect((await first.done).signal).to.equal("SIGKILL");
    const killed = (entries("funding")[1]!.rows as Array<{ line: number; taskHash: string }>)[0]!;
    expect(killed.line).to.equal(3);
    return { taskHash: killed.taskHash, txHash: entries("funded")[1]!.txHash as string };
  }

  /** After a rerun that left line 3 paid and never listable: the five other rows posted once, line 3 paid once. */
  async function expectPostedBesidesLine3(killed: { taskHash: string; txHash: string }, error: RegExp) {
    const rows = readResults(path.join(dir, "tasks.csv.results.csv"));
    expect(rows.map((r) => [r.line, r.status])).to.deep.equal([
      ["2", "posted"],
      ["3", "paid, not listed"],
      ["4", "posted"],
      ["5", "posted"],
      ["6", "posted"],
      ["7", "posted"],
    ]);
    expect(rows[1]).to.deep.include({ task_hash: killed.taskHash, tx_hash: killed.txHash });
    expect(rows[1]!.error).to.match(error);
    await s.sync();
    const { tasks } = (await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: posterKey })).body.data;
    expect(tasks.map((t) => t.meta.taskHash).sort()).to.deep.equal(
      rows
        .filter((r) => r.status === "posted")
        .map((r) => r.task_hash)
        .sort(),
    );
    expect(entries("posted").map((e) => e.taskHash)).not.to.include(killed.taskHash);
    return rows;
  }

  it("killed before a listing, that task cancelled: the rerun posts the rest, reports it NOT_OPEN and pays for nothing twice", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const killed = await killBeforeSecondListing(env);
    const cancel = await runCli(["cancel", killed.taskHash], { env, cwd: dir });
    expect(cancel.status, cancel.stderr).to.equal(0);
    expect(cancel.stdout).to.contain(`${killed.taskHash}: cancelled`);
    expect((await balances()).escrow - initial.escrow).to.equal(1_000_000n, "row 2 cancelled (its reward back), row 1 paid");

    // The only row left can never be posted: the run is over (exit 1), not "rerun" (3) forever.
    const rerun = await runCli(ARGS, { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(1);
    expect(rerun.stdout).to.contain("paid by an earlier run, no longer open on chain (cannot be listed, nothing to pay): 1");
    expect(rerun.stdout).to.contain("tasks to post: 4 (public 2, private 2)");
    expect(rerun.stdout).to.contain("6 rows: posted 5; paid, not listed 1; failed, nothing paid 0; not started 0");
    expect(rerun.stderr).to.contain("error ROWS_NOT_POSTABLE: 1 of 6 rows can never be posted (line 3: NOT_OPEN); rerunning changes nothing.");
    expect(rerun.stderr).to.not.contain("NOT_ALL_POSTED");
    await expectPostedBesidesLine3(killed, /^NOT_OPEN: The task was cancelled on chain .*; it cannot be listed\.$/);
    // Every row paid once; the cancelled one came back.
    const paid = await balances();
    expect(initial.poster - paid.poster).to.equal(TOTAL - 2_000_000n);
    expect(paid.escrow - initial.escrow).to.equal(TOTAL - 2_000_000n);

    const again = await runCli(ARGS, { env, cwd: dir });
    expect(again.status, again.stderr).to.equal(1);
    expect(again.stdout).to.contain("already posted by an earlier run: 5");
    expect(again.stdout).to.contain("tasks to post: 0");
    await expectPostedBesidesLine3(killed, /^NOT_OPEN: The task was cancelled on chain/);
    expect(await balances()).to.deep.equal(paid);

    const finish = await runCli(["finish-posts", "--file", "tasks.csv"], { env, cwd: dir });
    expect(finish.status, finish.stderr).to.equal(1);
    expect(finish.stdout).to.contain("paid by an earlier run, to be listed: 0");
    expect(finish.stdout).to.not.contain("never paid for");
    expect(finish.stderr).to.contain(
      "error ROWS_NOT_POSTABLE: 1 paid row(s) are no longer open on chain (cancelled, refunded or expired) and can never be listed",
    );
    expect(await balances()).to.deep.equal(paid);
  });

  it("killed before a listing, that task past its deadline: the rerun posts the rest and reports it NOT_OPEN (expired); cancel gets it back", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const killed = await killBeforeSecondListing(env);
    await time.increase(86_401);

    const rerun = await runCli(ARGS, { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(1);
    expect(rerun.stdout).to.contain("tasks to post: 4 (public 2, private 2)");
    const rows = await expectPostedBesidesLine3(
      killed,
      /^NOT_OPEN: The task expired on chain: its deadline passed before it was listed .*; it cannot be listed\.$/,
    );
    expect(rows[1]!.error).to.contain(`market cancel ${killed.taskHash}`);
    const paid = await balances();
    expect(initial.poster - paid.poster).to.equal(TOTAL);
    expect(paid.escrow - initial.escrow).to.equal(TOTAL);

    const cancel = await runCli(["cancel", killed.taskHash], { env, cwd: dir });
    expect(cancel.status, cancel.stderr).to.equal(0);
    expect((await balances()).poster - paid.poster).to.equal(2_000_000n);
  });

  it("killed after journaling a funding and before sending it: the rerun posts that row afresh, once", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const first = startCli(ARGS, { env, cwd: dir, pauseAfter: { step: "funding", ms: 1500 } });
    await until(() => entries("funding").length === 2, "the second funding entry");
    first.child.kill("SIGKILL");
    await first.done;
    const abandoned = (entries("funding")[1]!.rows as Array<{ taskHash: string }>)[0]!.taskHash;
    expect((await balances()).escrow - initial.escrow).to.equal(1_000_000n, "only row 1 is paid");

    const rerun = await runCli(ARGS, { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(0);
    expect(rerun.stdout).to.contain("tasks to post: 5 (public 2, private 3)");
    const rows = await expectAllPostedOnce();
    expect(rows[1]!.task_hash).to.not.equal(abandoned, "a private brief is encrypted afresh");
    expect((await s.escrow.getTask(abandoned)).poster).to.equal(hre.ethers.ZeroAddress);
  });

  it("killed after a listing and before journaling it: the rerun finds the task funded, lists it again (a no-op) and pays nothing", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const args = ["post-tasks", "--file", "tasks.csv", "--chunk", "3", "--yes"];
    const first = await runCli(args, { env, cwd: dir });
    expect(first.status, first.stderr).to.equal(0);
    // What a kill between the listing and its journal entry leaves: no `posted` entry for rows 2 and 5.
    const journalText = readFileSync(journal, "utf8").split("\n");
    const forgotten = new Set(
      [3, 6].map(
        (line) =>
          entries("funding")
            .flatMap((e) => e.rows as Array<{ line: number; key: string }>)
            .find((r) => r.line === line)!.key,
      ),
    );
    writeFileSync(
      journal,
      journalText.filter((l) => !(l.includes('"t":"posted"') && forgotten.has((JSON.parse(l) as { key: string }).key))).join("\n"),
    );

    const rerun = await runCli(args, { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(0);
    expect(rerun.stdout).to.contain("already posted by an earlier run: 4");
    expect(rerun.stdout).to.contain("paid by an earlier run, to be listed (nothing to pay): 2");
    expect(rerun.stdout).to.contain("tasks to post: 0");
    await expectAllPostedOnce();
  });

  it("killed after a listing and before journaling it, that task cancelled since: the rerun finds it listed and counts it posted", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const first = await runCli(ARGS, { env, cwd: dir });
    expect(first.status, first.stderr).to.equal(0);
    const forgotten = entries("funding")
      .flatMap((e) => e.rows as Array<{ line: number; key: string; taskHash: string }>)
      .find((r) => r.line === 3)!;
    writeFileSync(
      journal,
      readFileSync(journal, "utf8")
        .split("\n")
        .filter((l) => !(l.includes('"t":"posted"') && l.includes(forgotten.key)))
        .join("\n"),
    );
    const cancel = await runCli(["cancel", forgotten.taskHash], { env, cwd: dir });
    expect(cancel.status, cancel.stderr).to.equal(0);
    const paid = await balances();

    const rerun = await runCli(ARGS, { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(0);
    expect(readResults(path.join(dir, "tasks.csv.results.csv")).map((r) => r.status)).to.deep.equal(Array(6).fill("posted"));
    expect(await balances()).to.deep.equal(paid);
  });

  it("killed while the funding transaction is pending: the rerun waits for it, finds it from the TaskCreated log and lists it", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const args = ["post-tasks", "--file", "tasks.csv", "--chunk", "2", "--yes"];
    await hre.network.provider.send("evm_setAutomine", [false]);
    const first = startCli(args, { env, cwd: dir });
    await until(() => entries("funding").length === 1, "the first funding entry");
    const provider = hre.ethers.provider;
    await until(
      async () =>
        (await provider.getTransactionCount(s.poster.address, "pending")) > (await provider.getTransactionCount(s.poster.address, "latest")),
      "the funding in the mempool",
    );
    const second = await runCli(args, { env, cwd: dir });
    expect(second.status).to.equal(1);
    expect(second.stderr).to.match(/^error RUN_IN_PROGRESS: Another market run \(pid \d+\) is using /);
    first.child.kill("SIGKILL");
    await first.done;
    expect(entries("funded")).to.have.length(0);

    const rerun = startCli(args, { env, cwd: dir });
    await until(() => rerun.output().stderr.includes("waiting for its funding transaction"), "the rerun to wait");
    await hre.network.provider.send("evm_setAutomine", [true]);
    await hre.network.provider.send("evm_mine", []);
    const done = await rerun.done;
    expect(done.status, done.stderr).to.equal(0);
    expect(done.stdout).to.contain("paid by an earlier run, to be listed (nothing to pay): 2");
    const rows = await expectAllPostedOnce();
    expect(rows[0]!.tx_hash).to.equal(rows[1]!.tx_hash);
    expect(entries("funded")[0]!.txHash).to.equal(rows[0]!.tx_hash, "the rerun journals the hash it found");
  });
});

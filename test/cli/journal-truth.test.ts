/**
 * Posting that tells the truth (issue 15, items 9, 10 and 13): a journal bound to its chain, escrow and API whose every
 * claim is checked on a rerun (a reset chain or database never reports "posted"); a copy of a task file that would pay
 * its rows again asks first (refused without a terminal unless --allow-repost); a dry run that shows what a resume
 * really pays; rows that can never be posted end the run with 1, not 3; and a results file that agrees with the
 * journal after a kill.
 */
import { expect } from "chai";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, readJournalEntries, readResults, runCli, startCli, taskDir, until } from "../support/cli";
import { MarketClient, type TaskView } from "../../sdk/src/client";

const FOUR_ROWS = [
  "instructions,reward,privacy",
  "Public brief one: list three harbours.,1,public",
  "Private brief two: summarise my harbour notes.,2,private",
  "Public brief three: list three lighthouses.,3,public",
  "Private brief four: translate my harbour letter.,4,private",
].join("\n");
const TOTAL = 10_000_000n;

/** The worker registered (no tags), the poster's and the stranger's API keys. */
const seededStack = stackFixture(async (s) => {
  await s.registerAgent(s.worker, []);
  return { posterKey: await s.apiKeyFor(s.poster), strangerKey: await s.apiKeyFor(s.stranger) };
});

describe("cli: posting that tells the truth", function () {
  let s: Stack;
  let keys: { posterKey: string; strangerKey: string };
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const balances = async () => ({ poster: await s.usdc.balanceOf(s.poster.address), escrow: await s.usdc.balanceOf(s.escrowAddress) });
  const results = (file = "tasks.csv") => readResults(path.join(dir, `${file}.results.csv`));
  const listedHashes = async () => {
    await s.sync();
    const { tasks } = (await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted", { key: keys.posterKey })).body.data;
    return tasks.map((t) => t.meta.taskHash).sort();
  };

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({ stack: s, seeded: keys } = await seededStack());
    dir = taskDir({ "tasks.csv": FOUR_ROWS });
    env = await cliEnv(s, s.poster, { apiKey: keys.posterKey });
  });
  afterEach(async function () {
    await s.close();
  });

  it("a rerun against a reset chain refuses (JOURNAL_MISMATCH): it never reports rows posted that the chain does not have, and pays nothing", async function () {
    const first = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env, cwd: dir });
    expect(first.status, first.stderr).to.equal(0);
    const journal = readJournalEntries(path.join(dir, "tasks.csv.results.csv.journal.jsonl"));
    const bind = journal.find((e) => e.t === "bind")!;
    expect(journal[0]).to.equal(bind, "the binding comes first");
    expect(bind).to.deep.include({ chain: "arc", chainId: 31337, escrow: s.escrowAddress, wallet: s.poster.address, api: s.apiUrl });
    expect(bind.genesis).to.match(/^0x[0-9a-f]{64}$/);
    const resultsBefore = readFileSync(path.join(dir, "tasks.csv.results.csv"), "utf8");

    // The chain and the database start again from before the run (a new local stack), the same keys and escrow.
    await s.close();
    ({ stack: s, seeded: keys } = await seededStack());
    env = await cliEnv(s, s.poster, { apiKey: keys.posterKey, extra: { MARKET_STATE_DIR: env.MARKET_STATE_DIR! } });
    const before = await balances();
    for (const args of [
      ["post-tasks", "--file", "tasks.csv", "--yes"],
      ["post-tasks", "--file", "tasks.csv", "--dry-run"],
      ["finish-posts", "--file", "tasks.csv"],
    ]) {
      const rerun = await runCli(args, { env, cwd: dir });
      expect(rerun.status, `${args.join(" ")}: ${rerun.stderr}`).to.equal(1);
      expect(rerun.stderr).to.match(
        /error JOURNAL_MISMATCH: The journal .* says line [2-5] was paid for \(task 0x[0-9a-f]{64}, transaction 0x[0-9a-f]{64}\), but the escrow/,
      );
      expect(rerun.stderr).to.contain("the chain or the escrow was reset since. Nothing was sent");
      expect(rerun.stdout).to.not.contain("posted");
    }
    expect(await balances()).to.deep.equal(before);
    expect(readFileSync(path.join(dir, "tasks.csv.results.csv"), "utf8")).to.equal(resultsBefore, "the results file is left as it was");
    expect(await listedHashes()).to.deep.equal([]);
  });

  it("a rerun after the API lost its listings (database reset) lists the paid rows again, paying nothing, and says so", async function () {
    const first = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env, cwd: dir });
    expect(first.status, first.stderr).to.equal(0);
    const hashes = await listedHashes();
    expect(hashes).to.have.length(4);
    const paid = await balances();
    // The service forgets two of them (its database restored from before they were listed).
    const forgotten = [results()[0]!.task_hash!, results()[1]!.task_hash!];
    await s.db.deleteFrom("task_keys").where("task_hash", "in", forgotten).execute();
    await s.db.deleteFrom("listing_capabilities").where("task_hash", "in", forgotten).execute();
    await s.db.deleteFrom("listings").where("task_hash", "in", forgotten).execute();
    expect(await listedHashes()).to.have.length(2);

    const rerun = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(0);
    expect(rerun.stderr).to.contain("note: 2 row(s) the journal says were posted are paid on chain but not listed by");
    expect(rerun.stdout).to.contain("already posted by an earlier run: 2");
    expect(rerun.stdout).to.contain("paid by an earlier run, to be listed (nothing to pay): 2");
    expect(rerun.stdout).to.contain("tasks to post: 0");
    expect(results().map((r) => r.status)).to.deep.equal(Array(4).fill("posted"));
    expect(await listedHashes()).to.deep.equal(hashes);
    expect(await balances()).to.deep.equal(paid);
  });

  it("a copy of a task file under another name asks before paying its rows again: refused without a terminal, paid with --allow-repost", async function () {
    const first = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env, cwd: dir });
    expect(first.status, first.stderr).to.equal(0);
    const paid = await balances();
    copyFileSync(path.join(dir, "tasks.csv"), path.join(dir, "copy.csv"));

    const dry = await runCli(["post-tasks", "--file", "copy.csv", "--dry-run"], { env, cwd: dir });
    expect(dry.status, dry.stderr).to.equal(0);
    expect(dry.stdout).to.contain("already paid for by this wallet from a task file (a copy of one?): 2 private row(s) below would be paid again");
    // Its public rows are listed already: checked before the summary, not counted to post (issue 29, item 13).
    expect(dry.stdout).to.contain("public briefs listed already (TASK_HASH_IN_USE; not posted, nothing to pay): 2");
    expect(dry.stdout).to.contain("tasks to post: 2 (public 0, private 2)");

    const refused = await runCli(["post-tasks", "--file", "copy.csv", "--yes"], { env, cwd: dir });
    expect(refused.status).to.equal(1);
    expect(refused.stdout).to.contain(
      "already paid for by this wallet from a task file (a copy of one?): 2 private row(s) below would be paid again",
    );
    expect(refused.stdout).to.match(
      new RegExp(
        `  line 3: as ${path.join(dir, "tasks.csv").replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} line 3 on \\d{4}-\\d\\d-\\d\\d, task 0x[0-9a-f]{64}`,
      ),
    );
    expect(refused.stderr).to.match(
      /^error ALREADY_FUNDED: 2 private row\(s\) of this file were already paid for by this wallet .* Pass --allow-repost/,
    );
    expect(await balances()).to.deep.equal(paid, "nothing paid");
    expect(existsSync(path.join(dir, "copy.csv.results.csv.journal.jsonl"))).to.equal(false);

    // The public rows are refused by the service anyway (their briefs are listed): TASK_HASH_IN_USE, final.
    const reposted = await runCli(["post-tasks", "--file", "copy.csv", "--yes", "--allow-repost"], { env, cwd: dir });
    expect(reposted.status, reposted.stderr).to.equal(1);
    expect(reposted.stderr).to.contain("note: paying again for 2 private row(s) already funded by this wallet (--allow-repost).");
    expect(results("copy.csv").map((r) => [r.line, r.status, (r.error ?? "").split(":")[0]])).to.deep.equal([
      ["2", "failed, nothing paid", "TASK_HASH_IN_USE"],
      ["3", "posted", ""],
      ["4", "failed, nothing paid", "TASK_HASH_IN_USE"],
      ["5", "posted", ""],
    ]);
    expect(paid.poster - (await balances()).poster).to.equal(6_000_000n, "the two private rows paid again");
  });

  it("rows that can never be posted (a public brief listed before)  end the run with 1, and a rerun does not try them again", async function () {
    const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    // Listed first through the SDK (by anyone; here the same wallet): its hash is taken for good.
    const listedFirst = await poster.postTask({
      instructions: "Public brief three: list three lighthouses.",
      amountRaw: 1_000_000n,
      privacy: "public",
    });
    expect(listedFirst.status).to.equal("posted");
    const first = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env, cwd: dir });
    expect(first.status, first.stderr).to.equal(1);
    expect(first.stderr).to.contain(
      "error ROWS_NOT_POSTABLE: 1 of 4 rows can never be posted (line 4: TASK_HASH_IN_USE); rerunning changes nothing.",
    );
    expect(first.stderr).to.not.contain("NOT_ALL_POSTED");
    expect(results().map((r) => r.status)).to.deep.equal(["posted", "posted", "failed, nothing paid", "posted"]);
    const paid = await balances();

    const rerun = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env, cwd: dir });
    expect(rerun.status, rerun.stderr).to.equal(1);
    expect(rerun.stdout).to.contain("refused for good by an earlier run (not tried again): 1");
    expect(rerun.stdout).to.contain("tasks to post: 0");
    expect(results()[2]!.error).to.match(/^TASK_HASH_IN_USE: /);
    expect(await balances()).to.deep.equal(paid);
    const failures = readJournalEntries(path.join(dir, "tasks.csv.results.csv.journal.jsonl")).filter((e) => e.t === "failed");
    expect(failures).to.have.length(1, "not tried again");
  });

  it("after a kill, the results file agrees with the journal, and the dry run shows only what a resume would really pay", async function () {
    const args = ["post-tasks", "--file", "tasks.csv", "--chunk", "1", "--yes"];
    const journalFile = path.join(dir, "tasks.csv.results.csv.journal.jsonl");
    const entries = (type: string) => readJournalEntries(journalFile).filter((e) => e.t === type);
    const initial = await balances();

    // Killed once the second row's funding is journaled, before it is sent. The first row's listing runs beside that
    // funding (the SDK lists a chunk while it funds the next), so the kill waits, inside the pause, for it to be posted.
    const atFunding = startCli(args, { env, cwd: dir, pauseAfter: { step: "funding", ms: 5_000 } });
    const pauses = (run: { output(): { stderr: string } }, step: string) => run.output().stderr.split(`paused after ${step}`).length - 1;
    await until(
      () => pauses(atFunding, "funding") === 2 && results()[0]!.status === "posted",
      "the pause after the second funding entry, the first row listed",
    );
    atFunding.child.kill("SIGKILL");
    await atFunding.done;
    expect(results().map((r) => [r.line, r.status, (r.error ?? "").split(":")[0]])).to.deep.equal([
      ["2", "posted", ""],
      ["3", "not started", "TX_PENDING"],
      ["4", "not started", ""],
      ["5", "not started", ""],
    ]);

    // Rerun, killed once the second row's funding is mined, before its listing.
    const atFunded = startCli(args, { env, cwd: dir, pauseAfter: { step: "funded", ms: 1500 } });
    // The rerun's first funding is the second row's (its abandoned funding was never sent).
    await until(() => pauses(atFunded, "funded") === 1, "the pause after the second row's funding is mined");
    atFunded.child.kill("SIGKILL");
    await atFunded.done;
    const rows = results();
    expect(rows.map((r) => [r.line, r.status])).to.deep.equal([
      ["2", "posted"],
      ["3", "paid, not listed"],
      ["4", "not started"],
      ["5", "not started"],
    ]);
    expect(rows[1]!.tx_hash).to.equal(entries("funded")[1]!.txHash);
    const paid = await balances();
    expect(paid.escrow - initial.escrow).to.equal(3_000_000n, "rows 2 and 3 paid");

    // The dry run reads the chain: row 3 is paid already (listed for nothing), rows 4 and 5 cost 7 USDC; nothing written.
    const journalBefore = readFileSync(journalFile, "utf8");
    const lockBefore = existsSync(`${journalFile}.lock`) ? readFileSync(`${journalFile}.lock`, "utf8") : undefined; // the killed run's
    const dry = await runCli(["post-tasks", "--file", "tasks.csv", "--dry-run", "--json"], { env, cwd: dir });
    expect(dry.status, dry.stderr).to.equal(0);
    expect(dry.stderr).to.contain("paid by an earlier run, to be listed (nothing to pay): 1");
    expect(dry.stderr).to.contain("total escrow: 7 USDC");
    expect(JSON.parse(dry.stdout)).to.deep.include({
      dryRun: true,
      alreadyPosted: 1,
      toList: 1,
      toPay: { tasks: 2, totalRaw: "7000000", transactions: 1 },
    });
    expect(readFileSync(journalFile, "utf8")).to.equal(journalBefore);
    expect(existsSync(`${journalFile}.lock`) ? readFileSync(`${journalFile}.lock`, "utf8") : undefined).to.equal(lockBefore, "no lock taken");

    const finished = await runCli(args, { env, cwd: dir });
    expect(finished.status, finished.stderr).to.equal(0);
    expect(results().map((r) => r.status)).to.deep.equal(Array(4).fill("posted"));
    expect((await balances()).escrow - initial.escrow).to.equal(TOTAL, "every row paid once");
    expect(await listedHashes()).to.have.length(4);
  });
});

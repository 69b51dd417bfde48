import { expect } from "chai";
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import hre from "hardhat";
import { startStack, type Stack } from "../support/stack";
import { spawn } from "node:child_process";
import { CLI_MAIN, cliEnv, ensureCliBuilt, readResults, runCli, taskDir } from "../support/cli";
import { publicTaskHash } from "@market/core/crypto";
import type { TaskView } from "../../sdk/src/client";

const RESULT_HEADER = "line,status,escrow,task_id,task_hash,tx_hash,error";
const CAPABILITIES = ["summarization", "web_research", "translation", "data_extraction", "email_drafting"];

const MIXED_CSV = (target: string) =>
  [
    "Instructions,REWARD,Amount,privacy,verification,duration,zone,routing_summary,capabilities,target,instructions_file",
    '"Summarise the causes of the French Revolution, in five bullet points.",2.5,,public,,,,,summarization;web_research,,',
    '"Translate this memo into French:',
    '""Budget freeze"" for the third quarter.",,1500000,private,manual,7200,eu-west,Translation of a short memo,"translation,summarization",,',
    ",0.75,,public,,,,,summarization,,briefs/long.txt",
    `Write a haiku about escrow.,,1000000,public,auto,3600,,,,${target},`,
    "Check the totals of this private ledger.,1,,,,,,,data_extraction,,",
    "Check the totals of this private ledger.,1,,,,,,,data_extraction,,",
  ].join("\n") + "\n";
const LONG_BRIEF = "Summarise the attached public report on coastal erosion.\nKeep it under 200 words.\n";
const MIXED_TOTAL = 7_750_000n;

const JSONL = [
  JSON.stringify({
    instructions: "Extract every date from this public notice.",
    amount: "3000000",
    privacy: "public",
    capabilities: ["data_extraction"],
  }),
  "",
  JSON.stringify({ Instructions_File: "notes/brief.md", reward: 1.25, privacy: "public", capabilities: "summarization,translation" }),
  JSON.stringify({
    instructions: "Draft a reply to this private email.",
    reward: "0.5",
    duration: 3600,
    verification: "manual",
    routing_summary: "Email reply draft",
    capabilities: "email_drafting;summarization",
  }),
].join("\n");
const JSONL_BRIEF = "Summarise these meeting notes for the team.";
const JSONL_TOTAL = 4_750_000n;

describe("cli: market post-tasks", function () {
  let s: Stack;
  let posterKey: string;

  before(async function () {
    ensureCliBuilt();
    s = await startStack();
    await s.registerAgent(s.worker, CAPABILITIES);
    posterKey = (await s.clientOptions(s.poster)).apiKey;
  });
  after(async function () {
    await s.close();
  });

  async function balances() {
    return {
      poster: await s.usdc.balanceOf(s.poster.address),
      escrow: await s.usdc.balanceOf(s.escrowAddress),
      nonce: await hre.ethers.provider.getTransactionCount(s.poster.address),
    };
  }

  async function posted(): Promise<TaskView[]> {
    await s.sync();
    const answer = await s.call<{ tasks: TaskView[] }>("GET", "/api/v1/a2a/tasks/posted?limit=1000", { key: posterKey });
    expect(answer.status).to.equal(200);
    return answer.body.data.tasks;
  }

  /** Each row's funding receipt is the poster's, and carries TaskCreated for the row's task hash and amount. */
  async function expectFunded(rows: Array<Record<string, string>>) {
    for (const row of rows) {
      const receipt = await hre.ethers.provider.getTransactionReceipt(row.tx_hash!);
      expect(receipt?.status, row.line).to.equal(1);
      expect(receipt!.from).to.equal(s.poster.address);
      const created = receipt!.logs
        .map((log) => s.escrow.interface.parseLog(log))
        .filter((e) => e?.name === "TaskCreated" && e.args.taskHash === row.task_hash);
      expect(created, row.line).to.have.length(1);
      expect(created[0]!.args.amount).to.equal(BigInt(Math.round(Number(row.escrow) * 1e6)));
    }
  }

  it("posts a mixed CSV (public and private, quoting, instructions_file, ; and , tags, reward and amount): exact results, balances and listings", async function () {
    const dir = taskDir({ "tasks.csv": MIXED_CSV(s.worker.address), "briefs/long.txt": LONG_BRIEF });
    const before = await balances();
    const run = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env: await cliEnv(s, s.poster), cwd: dir });
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stdout).to.contain("tasks to post: 6 (public 3, private 3)");
    expect(run.stdout).to.contain("total escrow: 7.75 USDC (7750000 raw); public 4.25 USDC, private 3.5 USDC");
    expect(run.stdout).to.contain(
      "transactions: 1 (1 funding; no approval: the allowance already covers the total); batch creation: up to 20 tasks per funding",
    );
    expect(run.stdout).to.contain("6 rows: posted 6; paid, not listed 0; failed, nothing paid 0; not started 0");

    const text = readFileSync(path.join(dir, "tasks.csv.results.csv"), "utf8");
    expect(text.split("\n")[0]).to.equal(RESULT_HEADER);
    const rows = readResults(path.join(dir, "tasks.csv.results.csv"));
    expect(rows.map((r) => [r.line, r.status, r.escrow, r.error])).to.deep.equal([
      ["2", "posted", "2.5", ""],
      ["3", "posted", "1.5", ""],
      ["5", "posted", "0.75", ""],
      ["6", "posted", "1", ""],
      ["7", "posted", "1", ""],
      ["8", "posted", "1", ""],
    ]);
    for (const r of rows)
      expect(r.task_id)
        .to.equal(r.task_hash)
        .and.match(/^0x[0-9a-f]{64}$/);
    expect(rows[0]!.task_hash).to.equal(publicTaskHash("Summarise the causes of the French Revolution, in five bullet points."));
    expect(rows[2]!.task_hash).to.equal(publicTaskHash(LONG_BRIEF));
    expect(rows[3]!.task_hash).to.equal(publicTaskHash("Write a haiku about escrow."));
    expect(new Set(rows.map((r) => r.task_hash)).size).to.equal(6, "the private row given twice is posted twice");
    await expectFunded(rows);

    const after = await balances();
    expect(before.poster - after.poster).to.equal(MIXED_TOTAL);
    expect(after.escrow - before.escrow).to.equal(MIXED_TOTAL);

    const listed = new Map<string, TaskView>((await posted()).map((t) => [t.meta.taskHash, t]));
    const meta = (line: number) => listed.get(rows[line]!.task_hash!)!.meta;
    expect(rows.every((r) => listed.has(r.task_hash!))).to.equal(true);
    expect(meta(0)).to.deep.include({ privacy: "public", verificationMode: "auto", requiredCapabilities: ["summarization", "web_research"] });
    expect(meta(0).reward.amount).to.equal("2500000");
    expect(meta(1)).to.deep.include({
      privacy: "private",
      verificationMode: "manual",
      routingSummary: "Translation of a short memo",
      requiredCapabilities: ["translation", "summarization"],
    });
    expect(meta(1).reward.amount).to.equal("1500000");
    expect(meta(2).publicBrief).to.equal(LONG_BRIEF);
    expect(meta(3).targetExecutor).to.equal(s.worker.address);
    expect(meta(4)).to.deep.include({ privacy: "private", requiredCapabilities: ["data_extraction"] });
  });

  it("posts a JSON Lines file (instructions_file, tags as a list and as text, reward as a number): exact results, balances and listings", async function () {
    const dir = taskDir({ "tasks.jsonl": JSONL, "notes/brief.md": JSONL_BRIEF });
    await (await s.usdc.connect(s.poster).approve(s.escrowAddress, 0n)).wait();
    const before = await balances();
    const run = await runCli(["post-tasks", "--file", "tasks.jsonl", "--yes", "--chunk", "2", "--results", "out/results.csv"], {
      env: await cliEnv(s, s.poster),
      cwd: dir,
    });
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stdout).to.contain("transactions: 3 (1 approval + 2 fundings); batch creation: up to 2 tasks per funding");
    expect(existsSync(path.join(dir, "tasks.jsonl.results.csv"))).to.equal(false);
    const rows = readResults(path.join(dir, "out/results.csv"));
    expect(rows.map((r) => [r.line, r.status, r.escrow])).to.deep.equal([
      ["1", "posted", "3"],
      ["3", "posted", "1.25"],
      ["4", "posted", "0.5"],
    ]);
    expect(rows[0]!.tx_hash).to.equal(rows[1]!.tx_hash, "rows 1 and 2 share a chunk");
    expect(rows[2]!.tx_hash).to.not.equal(rows[0]!.tx_hash);
    expect(rows[1]!.task_hash).to.equal(publicTaskHash(JSONL_BRIEF));
    await expectFunded(rows);

    const after = await balances();
    expect(after.nonce - before.nonce).to.equal(3, "one approval, two fundings");
    expect(await s.usdc.allowance(s.poster.address, s.escrowAddress)).to.equal(0n, "approved for the total exactly");
    expect(before.poster - after.poster).to.equal(JSONL_TOTAL);
    expect(after.escrow - before.escrow).to.equal(JSONL_TOTAL);
    const listed = new Map<string, TaskView>((await posted()).map((t) => [t.meta.taskHash, t]));
    expect(listed.get(rows[1]!.task_hash!)!.meta).to.deep.include({
      publicBrief: JSONL_BRIEF,
      requiredCapabilities: ["summarization", "translation"],
    });
    expect(listed.get(rows[2]!.task_hash!)!.meta).to.deep.include({
      privacy: "private",
      verificationMode: "manual",
      routingSummary: "Email reply draft",
      requiredCapabilities: ["email_drafting", "summarization"],
    });
  });

  it("--dry-run checks and shows the totals, and sends nothing", async function () {
    const dir = taskDir({
      // Public briefs of its own: those an earlier test listed are set aside as listed already (TASK_HASH_IN_USE).
      "tasks.csv": MIXED_CSV(s.worker.address)
        .replace(/French Revolution/, "Russian Revolution")
        .replace(/haiku about escrow/, "haiku about ledgers"),
      "briefs/long.txt": "Another brief.",
    });
    const before = await balances();
    const listedBefore = (await posted()).length;
    const run = await runCli(["post-tasks", "--file", "tasks.csv", "--dry-run"], { env: await cliEnv(s, s.poster), cwd: dir });
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stdout).to.contain("file: tasks.csv (6 rows, all valid)");
    expect(run.stdout).to.contain("tasks to post: 6 (public 3, private 3)");
    // The local files whose text becomes briefs are named before anything is sent (docs/security.md).
    expect(run.stdout).to.contain("briefs read from 1 local file (public ones are published as they are):");
    expect(run.stdout).to.contain(`  line 5 (public): ${realpathSync(path.join(dir, "briefs", "long.txt"))}`);
    expect(run.stdout).to.contain("total escrow: 7.75 USDC (7750000 raw)");
    expect(run.stdout).to.contain(
      "transactions: 2 (1 approval + 1 funding; no approval if the allowance already covers the total); batch creation: up to 20 tasks per funding",
    );
    expect(run.stdout).to.contain("dry run: nothing was sent");
    expect(await balances()).to.deep.equal(before);
    expect((await posted()).length).to.equal(listedBefore);
    expect(existsSync(path.join(dir, "tasks.csv.results.csv"))).to.equal(false);
  });

  it("--dry-run refuses a private row no registered agent can open (NO_EXECUTORS), as the real run does", async function () {
    const dir = taskDir({ "tasks.csv": "instructions,reward,privacy,capabilities\nTranslate my private letter.,1,private,legal_review\n" });
    const dry = await runCli(["post-tasks", "--file", "tasks.csv", "--dry-run"], { env: await cliEnv(s, s.poster), cwd: dir });
    const real = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], { env: await cliEnv(s, s.poster), cwd: dir });
    for (const run of [dry, real]) {
      expect(run.status).to.equal(1);
      expect(run.stderr).to.match(/^error INVALID_ROWS: /);
      expect(run.stderr).to.contain("line 2, column capabilities: NO_EXECUTORS: ");
    }
  });

  it("without a terminal and without --yes, refuses with CONFIRMATION_REQUIRED and sends nothing", async function () {
    const dir = taskDir({
      "tasks.csv": "instructions,instructions_file,reward,privacy\nName three uses of a paperclip.,,1,public\n,notes/b.txt,1,private\n",
      "notes/b.txt": "Name three uses of a stapler.",
    });
    const before = await balances();
    const listedBefore = (await posted()).length;
    const run = await runCli(["post-tasks", "--file", "tasks.csv"], { env: await cliEnv(s, s.poster), cwd: dir });
    expect(run.status).to.equal(1);
    expect(run.stdout).to.contain("tasks to post: 2 (public 1, private 1)");
    expect(run.stdout).to.contain(
      `briefs read from 1 local file (public ones are published as they are):\n  line 3 (private): ${realpathSync(path.join(dir, "notes", "b.txt"))}`,
    );
    expect(run.stderr).to.contain("error CONFIRMATION_REQUIRED: No terminal to confirm on: pass --yes to post. Nothing was sent.");
    expect(await balances()).to.deep.equal(before);
    expect((await posted()).length).to.equal(listedBefore);
    expect(readdirSync(dir)).to.deep.equal(["notes", "tasks.csv"], "no results file, no journal, no lock left behind");
  });

  it("on a terminal, asks once: no sends nothing; yes posts, with a progress bar on stderr", async function () {
    const dir = taskDir({ "tasks.csv": "instructions,reward,privacy\nName three uses of a brick.,1,public\nName three uses of a cork.,2,public\n" });
    const env = await cliEnv(s, s.poster);
    /** Runs the CLI on a pseudo-terminal (util-linux `script`) and answers its question. */
    const onTerminal = (answer: string) =>
      new Promise<{ status: number | null; output: string }>((resolve, reject) => {
        const child = spawn("script", ["-qec", `${process.execPath} ${CLI_MAIN} post-tasks --file tasks.csv`, "/dev/null"], { cwd: dir, env });
        let output = "";
        let answered = false;
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (!answered && output.includes("[y/N]")) {
            answered = true;
            child.stdin.write(`${answer}\n`);
          }
        });
        child.on("error", reject);
        child.on("close", (status) => resolve({ status, output }));
      });
    const before = await balances();
    const declined = await onTerminal("n");
    expect(declined.status).to.equal(1);
    expect(declined.output).to.contain("Pay 3 USDC into escrow for 2 task(s) on arc from");
    expect(declined.output).to.contain("error CONFIRMATION_REQUIRED: Not confirmed; nothing was sent.");
    expect(await balances()).to.deep.equal(before);

    const accepted = await onTerminal("y");
    expect(accepted.status, accepted.output).to.equal(0);
    expect(accepted.output).to.contain("] 2/2 rows");
    expect(accepted.output.match(/\[y\/N\]/g)).to.have.length(1);
    expect(before.poster - (await balances()).poster).to.equal(3_000_000n);
    expect(readResults(path.join(dir, "tasks.csv.results.csv")).map((r) => r.status)).to.deep.equal(["posted", "posted"]);
  });

  it("--max-total refuses a run above it with SPEND_LIMIT before sending anything", async function () {
    const dir = taskDir({
      "tasks.csv": "instructions,reward,privacy\nName four uses of a paperclip.,2,public\nName five uses of a paperclip.,2,public\n",
    });
    const before = await balances();
    const run = await runCli(["post-tasks", "--file", "tasks.csv", "--yes", "--max-total", "3.5"], { env: await cliEnv(s, s.poster), cwd: dir });
    expect(run.status).to.equal(1);
    expect(run.stderr).to.contain("error SPEND_LIMIT: The total escrow 4 USDC is above --max-total 3.5 USDC; nothing was sent.");
    expect(await balances()).to.deep.equal(before);
  });

  it("never prints the API key or the private key", async function () {
    const env = await cliEnv(s, s.poster);
    const dir = taskDir({ "tasks.csv": "instructions,reward\nx,1\n" });
    const wrongKey = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], {
      env: { ...env, MARKET_PRIVATE_KEY: (await s.clientOptions(s.stranger)).executor.privateKey },
      cwd: dir,
    });
    expect(wrongKey.status).to.equal(1);
    expect(wrongKey.stderr).to.contain("error OWNER_MISMATCH");
    const badUrl = await runCli(["post-tasks", "--file", "tasks.csv", "--yes"], {
      env: { ...env, MARKET_API_URL: `http://127.0.0.1:1/${env.MARKET_API_KEY}` },
      cwd: dir,
    });
    expect(badUrl.status).to.equal(1);
    for (const run of [wrongKey, badUrl]) {
      const output = run.stdout + run.stderr;
      expect(output).to.not.contain(env.MARKET_API_KEY);
      expect(output.toLowerCase()).to.not.contain(env.MARKET_PRIVATE_KEY!.slice(2).toLowerCase());
    }
  });
});

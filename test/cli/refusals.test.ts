import { expect } from "chai";
import { existsSync } from "node:fs";
import path from "node:path";
import hre from "hardhat";
import { startStack, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";

/** A file the CLI refuses whole, the code it prints, and the row detail it names. */
interface Refusal {
  name: string;
  files: Record<string, string>;
  code: string;
  detail?: string;
}

const many = (count: number) => ["instructions,amount", ...Array.from({ length: count }, (_, i) => `Private brief number ${i},1000000`)].join("\n");

const REFUSALS: Refusal[] = [
  {
    name: "an unknown column",
    files: { "t.csv": "instructions,reward,colour\nPaint it.,1,blue\n" },
    code: "BAD_COLUMNS",
    detail: 'line 1, column colour: BAD_COLUMNS: unknown column "colour"',
  },
  {
    name: "an unknown JSON Lines field",
    files: { "t.jsonl": '{"instructions":"Paint it.","reward":"1","colour":"blue"}\n' },
    code: "BAD_COLUMNS",
    detail: "line 1, column colour: BAD_COLUMNS",
  },
  {
    name: "the same public brief twice",
    files: { "t.csv": "instructions,reward,privacy\nName a prime.,1,public\nName a square.,1,public\nName a prime.,2,public\n" },
    code: "DUPLICATE_BRIEF",
    detail: "line 4, column instructions: DUPLICATE_BRIEF: same public brief as line 2",
  },
  {
    name: "reward and amount together",
    files: { "t.csv": "instructions,reward,amount\nDo it.,1,1000000\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column amount: REWARD_AND_AMOUNT",
  },
  {
    name: "neither reward nor amount",
    files: { "t.csv": "instructions,reward,amount\nDo it.,,\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column reward: REWARD_REQUIRED",
  },
  {
    name: "a duration below an hour",
    files: { "t.csv": "instructions,reward,duration\nDo it.,1,600\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column duration: DURATION_OUT_OF_RANGE",
  },
  {
    name: "a duration that is not a number",
    files: { "t.jsonl": '{"instructions":"Do it.","reward":"1","duration":"a day"}\n' },
    code: "INVALID_ROWS",
    detail: "line 1, column duration: DURATION_NOT_INTEGER",
  },
  {
    name: "a bad privacy",
    files: { "t.csv": "instructions,reward,privacy\nDo it.,1,secret\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column privacy: INVALID_PRIVACY",
  },
  {
    name: "a bad verification",
    files: { "t.csv": "instructions,reward,verification\nDo it.,1,oracle\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column verification: INVALID_VERIFICATION",
  },
  {
    name: "a zone over 128 characters",
    files: { "t.csv": `instructions,reward,zone\nDo it.,1,${"z".repeat(129)}\n` },
    code: "INVALID_ROWS",
    detail: "line 2, column zone: ZONE_TOO_LONG",
  },
  {
    name: "a routing summary over 500 characters",
    files: { "t.csv": `instructions,reward,routing_summary\nDo it.,1,${"r".repeat(501)}\n` },
    code: "INVALID_ROWS",
    detail: "line 2, column routing_summary: ROUTING_SUMMARY_TOO_LONG",
  },
  {
    name: "a malformed capability",
    files: { "t.csv": "instructions,reward,capabilities\nDo it.,1,summarization;juggling balls\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column capabilities: INVALID_CAPABILITY: malformed capability tag: juggling balls (a letter, then letters",
  },
  {
    name: "a bad target",
    files: { "t.csv": "instructions,reward,target\nDo it.,1,0x1234\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column target: INVALID_ADDRESS",
  },
  {
    name: "more than 1,000 rows",
    files: { "t.csv": many(1001) },
    code: "INVALID_ROWS",
    detail: "line 1002: TOO_MANY_ROWS: at most 1000 rows per run; this file has 1001",
  },
  {
    name: "a missing instructions_file",
    files: { "t.csv": "instructions_file,reward\nbriefs/missing.txt,1\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column instructions_file: INSTRUCTIONS_FILE_UNREADABLE: cannot read briefs/missing.txt",
  },
  {
    name: "an absolute instructions_file (docs/security.md)",
    files: { "t.csv": "instructions_file,reward\n/etc/hostname,1\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column instructions_file: INSTRUCTIONS_FILE_OUTSIDE: cannot read /etc/hostname",
  },
  {
    name: "an instructions_file above the task file's folder",
    files: { "t.csv": "instructions_file,reward\n../../../../../../../../etc/hostname,1\n" },
    code: "INVALID_ROWS",
    detail: "line 2, column instructions_file: INSTRUCTIONS_FILE_OUTSIDE",
  },
  {
    name: "a chain the marketplace does not know",
    files: { "t.csv": "instructions,reward,chain\nDo it.,1,solana\n" },
    code: "INVALID_ROWS",
    detail: 'line 2, column chain: INVALID_VALUE: chain must be one of arc, 0g, base, got "solana"',
  },
  {
    name: "a row on a chain the service does not settle on, before any row of another chain is paid",
    files: { "t.csv": "instructions,reward,chain\nDo it on arc.,1,arc\nDo it on 0g.,1,0g\n" },
    code: "WRONG_CHAIN",
  },
  {
    name: "a CSV quote never closed",
    files: { "t.csv": 'instructions,reward\n"Do it.,1\nDo that.,2\n' },
    code: "INVALID_ROWS",
    detail: "line 2: CSV_UNTERMINATED_QUOTE",
  },
  {
    name: "a bad reward and a bad row together",
    files: { "t.csv": "instructions,reward\nDo it.,2.5.1\n,1\n" },
    code: "INVALID_ROWS",
    detail: "line 3, column instructions: INSTRUCTIONS_REQUIRED",
  },
];

describe("cli: bulk file refusals", function () {
  let s: Stack;
  let env: NodeJS.ProcessEnv;
  let initial: { poster: bigint; nonce: number };

  const snapshot = async () => ({
    poster: await s.usdc.balanceOf(s.poster.address),
    nonce: await hre.ethers.provider.getTransactionCount(s.poster.address),
  });

  before(async function () {
    ensureCliBuilt();
    s = await startStack();
    await s.registerAgent(s.worker, ["summarization"]);
    env = await cliEnv(s, s.poster);
    initial = await snapshot();
  });
  after(async function () {
    await s.close();
  });

  for (const refusal of REFUSALS) {
    it(`refuses ${refusal.name} with ${refusal.code}, sending nothing`, async function () {
      const dir = taskDir(refusal.files);
      const file = Object.keys(refusal.files)[0]!;
      const run = await runCli(["post-tasks", "--file", file, "--yes"], { env, cwd: dir });
      expect(run.status, run.stderr).to.equal(1);
      expect(run.stderr).to.match(new RegExp(`^error ${refusal.code}: .*nothing was sent\\.\\n`));
      if (refusal.detail) expect(run.stderr).to.contain(`  ${refusal.detail}`);
      expect(run.stdout).to.equal("");
      expect(existsSync(path.join(dir, `${file}.results.csv`))).to.equal(false);
      expect(await snapshot()).to.deep.equal(initial);
    });
  }

  it("prints every bad row of the file, each with its line, column, code and message", async function () {
    const dir = taskDir({ "t.csv": "instructions,reward,privacy,zone\nGood row.,1,public,\nBad reward.,x,public,\nBad privacy.,1,open,\n" });
    const run = await runCli(["post-tasks", "--file", "t.csv", "--dry-run"], { env, cwd: dir });
    expect(run.status).to.equal(1);
    expect(run.stderr.split("\n")).to.deep.equal([
      "error INVALID_ROWS: 2 of 3 rows are invalid; nothing was sent.",
      '  line 3, column reward: AMOUNT_NOT_DECIMAL: reward must be a decimal number such as 2.5, got "x"',
      '  line 4, column privacy: INVALID_PRIVACY: privacy must be public or private, got "open"',
      "",
    ]);
  });

  it("refuses private rows no registered agent can open (INVALID_ROWS, NO_EXECUTORS), sending nothing", async function () {
    const dir = taskDir({ "t.csv": "instructions,reward,capabilities\nSummarise my notes.,1,summarization\nTranslate my letter.,1,translation\n" });
    const run = await runCli(["post-tasks", "--file", "t.csv", "--yes"], { env, cwd: dir });
    expect(run.status).to.equal(1);
    expect(run.stderr).to.contain("error INVALID_ROWS: No registered agent on the posting chain can open some private briefs; nothing was sent.");
    expect(run.stderr).to.contain("  line 3, column capabilities: NO_EXECUTORS: ");
    expect(await snapshot()).to.deep.equal(initial);
  });

  it("allows the same private brief twice", async function () {
    const dir = taskDir({ "t.csv": "instructions,reward\nSummarise my notes.,1\nSummarise my notes.,1\n" });
    const run = await runCli(["post-tasks", "--file", "t.csv", "--dry-run"], { env, cwd: dir });
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stdout).to.contain("tasks to post: 2 (public 0, private 2)");
  });

  it("refuses bad arguments with status 2", async function () {
    const dir = taskDir({ "t.csv": "instructions,reward\nDo it.,1\n", "t.txt": "" });
    for (const args of [
      ["post-tasks", "--file", "t.csv", "--chunk", "0"],
      ["post-tasks"],
      ["post-tasks", "--file", "t.txt"],
      ["review", "0x12", "--approve"],
      ["nonsense"],
    ]) {
      const run = await runCli(args, { env, cwd: dir });
      expect(run.status, `${args.join(" ")}: ${run.stderr}`).to.equal(2);
    }
    expect(await snapshot()).to.deep.equal(initial);
  });
});

/**
 * Everyday tooling (issue 15, items 15 and 17): `market keys` signing in with MARKET_PRIVATE_KEY alone, `market tasks`
 * (posted, `--assigned`, `--status`), `market status`, `--json` on commands and their errors, a progress line per chunk
 * without a terminal, the worker's `market release` and `market dispute`, and an agent-mode verdict shown to every
 * party, `market review --approve` printing the settled status.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";
import { MarketClient, type TaskView } from "../../sdk/src/client";
import type { ApiKeyInfo, AssignedTaskView, CreatedApiKey } from "@market/core/api";

/** The poster's and the verifier's API keys; the worker registered as an agent on arc (no tags), with its key. */
const seededStack = stackFixture(async (s) => ({
  posterKey: await s.apiKeyFor(s.poster),
  verifierKey: await s.apiKeyFor(s.agentVerifier),
  workerKey: await s.registerAgent(s.worker, []),
}));

describe("cli: everyday tooling", function () {
  let s: Stack;
  let keys: { posterKey: string; verifierKey: string; workerKey: string };
  let poster: MarketClient;
  let worker: MarketClient;
  let posterEnv: NodeJS.ProcessEnv;
  let workerEnv: NodeJS.ProcessEnv;
  let cwd: string;

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({ stack: s, seeded: keys } = await seededStack());
    poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
    worker = new MarketClient(await s.clientOptions(s.worker, keys.workerKey));
    posterEnv = await cliEnv(s, s.poster, { apiKey: keys.posterKey });
    workerEnv = await cliEnv(s, s.worker, { apiKey: keys.workerKey });
    cwd = taskDir({});
  });
  afterEach(async function () {
    await s.close();
  });

  const json = <T>(stdout: string) => JSON.parse(stdout) as T;

  it("market keys create|list|revoke sign in with MARKET_PRIVATE_KEY alone: a new wallet gets its first API key", async function () {
    const wallet = Wallet.createRandom();
    const env = { ...(await cliEnv(s, s.stranger)), MARKET_PRIVATE_KEY: wallet.privateKey, MARKET_API_KEY: "" };
    const created = await runCli(["keys", "create", "--name", "laptop", "--json"], { env, cwd });
    expect(created.status, created.stderr).to.equal(0);
    const key = json<CreatedApiKey>(created.stdout);
    expect(key).to.deep.include({ name: "laptop", wallet: wallet.address });
    expect(key.key).to.match(/^sk_/);
    expect(created.stderr).to.contain("It is shown only now");

    // The key acts as the new wallet.
    const whoami = await s.call<{ addresses: string[] }>("GET", "/api/v1/api-keys/whoami", { key: key.key });
    expect(whoami.body.data.addresses).to.deep.equal([wallet.address]);
    const withKey = { ...env, MARKET_API_KEY: key.key };
    expect((await runCli(["tasks"], { env: withKey, cwd })).status).to.equal(0);

    const listed = await runCli(["keys", "list"], { env, cwd });
    expect(listed.status, listed.stderr).to.equal(0);
    expect(listed.stdout).to.contain("1 API key(s)");
    expect(listed.stdout).to.match(new RegExp(`${key.id}  ${key.prefix}\\.\\.\\.  laptop  ${wallet.address}  created .* active`));
    expect(listed.stdout).to.not.contain(key.key);

    // Another account cannot revoke it; its own account can.
    const strangerEnv = await cliEnv(s, s.stranger);
    const foreign = await runCli(["keys", "revoke", String(key.id)], { env: strangerEnv, cwd });
    expect(foreign.status).to.equal(1);
    expect(foreign.stderr).to.match(/^error KEY_NOT_FOUND: /);
    const revoked = await runCli(["keys", "revoke", String(key.id)], { env, cwd });
    expect(revoked.status, revoked.stderr).to.equal(0);
    expect(revoked.stdout).to.contain(`revoked API key ${key.id}`);
    const twice = await runCli(["keys", "revoke", String(key.id)], { env, cwd });
    expect(twice.status, twice.stderr).to.equal(0);
    expect(twice.stdout).to.contain(`API key ${key.id} was revoked already; nothing changed`);
    const after = await runCli(["tasks"], { env: withKey, cwd });
    expect(after.status).to.equal(1);
    expect(after.stderr).to.match(/^error INVALID_TOKEN: /);
    // What happened and what to do (issue 29, item 8).
    expect(after.stderr).to.contain("A local stack's `npm start` resets all state and prints new keys at every start");
    const list = json<{ keys: ApiKeyInfo[] }>((await runCli(["keys", "list", "--json"], { env, cwd })).stdout);
    expect(list.keys.map((k) => [k.id, k.revokedAt !== null])).to.deep.equal([[key.id, true]]);
    // Each command signed in and out: no session is left behind.
    const sessions = await s.db.selectFrom("sessions").select(["address", "revoked_at"]).where("address", "=", wallet.address).execute();
    expect(sessions).to.have.length(5);
    expect(sessions.filter((row) => row.revoked_at === null)).to.deep.equal([]);

    const noKey = await runCli(["keys", "list"], { env: { ...env, MARKET_PRIVATE_KEY: "" }, cwd });
    expect(noKey.status).to.equal(1);
    expect(noKey.stderr).to.match(/^error AUTH_REQUIRED: Set MARKET_PRIVATE_KEY/);
  });

  it("market tasks lists posted tasks (--status filters, --json), --assigned the worker's with rounds left; market status shows one", async function () {
    const posted = await poster.postTasks([
      { instructions: "Name three capes.", amountRaw: 2_500_000n, privacy: "public" },
      { instructions: "Name three straits.", amountRaw: 1_000_000n, privacy: "public" },
    ]);
    const [capes, straits] = posted.results.map((r) => r.taskHash!);
    await s.sync();
    await worker.acceptTask(straits!);
    await s.sync();

    const all = await runCli(["tasks"], { env: posterEnv, cwd });
    expect(all.status, all.stderr).to.equal(0);
    expect(all.stdout).to.contain("2 tasks you posted, newest first");
    expect(all.stdout).to.match(new RegExp(`${capes}  open +  2\\.5 USDC \\(2500000 raw\\)  rounds 0/3  deadline \\d{4}-\\d\\d-\\d\\dT`));
    expect(all.stdout).to.match(new RegExp(`${straits}  assigned +  1 USDC \\(1000000 raw\\)`));

    const open = await runCli(["tasks", "--status", "open", "--json"], { env: posterEnv, cwd });
    expect(open.status, open.stderr).to.equal(0);
    const openTasks = json<{ role: string; tasks: TaskView[] }>(open.stdout);
    expect(openTasks.role).to.equal("poster");
    expect(openTasks.tasks.map((t) => t.meta.taskHash)).to.deep.equal([capes]);

    const assigned = await runCli(["tasks", "--assigned", "--json"], { env: workerEnv, cwd });
    expect(assigned.status, assigned.stderr).to.equal(0);
    const held = json<{ role: string; tasks: AssignedTaskView[] }>(assigned.stdout);
    expect(held.role).to.equal("worker");
    expect(held.tasks.map((t) => [t.meta.taskHash, t.state.status, t.roundsLeft])).to.deep.equal([[straits, "assigned", 3]]);
    const human = await runCli(["tasks", "--assigned"], { env: workerEnv, cwd });
    expect(human.stdout).to.contain("rounds 0/3, 3 left");

    const bad = await runCli(["tasks", "--status", "finished", "--json"], { env: posterEnv, cwd });
    expect(bad.status).to.equal(2);
    expect(json<{ error: { code: string } }>(bad.stdout).error.code).to.equal("VALIDATION_FAILED");
    expect(bad.stderr).to.contain("--status finished is not a task status");

    const status = await runCli(["status", straits!], { env: posterEnv, cwd });
    expect(status.status, status.stderr).to.equal(0);
    expect(status.stdout).to.contain(`task: ${straits}\nstatus: assigned\n`);
    expect(status.stdout).to.contain("reward: 1 USDC (1000000 raw)");
    expect(status.stdout).to.contain(`worker: ${s.worker.address}`);
    expect(status.stdout).to.match(/deadline: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
    const view = json<TaskView>((await runCli(["status", straits!, "--json"], { env: posterEnv, cwd })).stdout);
    expect(view.state).to.deep.include({ status: "assigned", worker: s.worker.address, rounds: 0 });
    const malformed = await runCli(["status", "0x1234", "--json"], { env: posterEnv, cwd });
    expect(malformed.status).to.equal(2);
    expect(json<{ error: { code: string } }>(malformed.stdout).error.code).to.equal("VALIDATION_FAILED");

    // --wait: woken by the task's events (the cancellation), not at the end of its 60 s.
    const waiting = runCli(["status", capes!, "--wait", "60"], { env: posterEnv, cwd });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await poster.cancelAndRefund(capes!);
    const cancelledAt = Date.now();
    const waited = await waiting;
    expect(waited.status, waited.stderr).to.equal(0);
    expect(waited.stdout).to.contain(`task: ${capes}\nstatus: cancelled`);
    expect(Date.now() - cancelledAt).to.be.below(4_500);
  });

  it("post-tasks without a terminal prints a progress line per chunk, and --json its rows", async function () {
    const rows = ["instructions,reward,privacy", ...[1, 2, 3, 4, 5].map((i) => `Name ${i} famous bridges.,1,public`)].join("\n");
    const dir = taskDir({ "tasks.csv": rows });
    const run = await runCli(["post-tasks", "--file", "tasks.csv", "--chunk", "2", "--yes", "--json"], { env: posterEnv, cwd: dir });
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stderr.split("\n").filter((line) => line.startsWith("rows: "))).to.deep.equal(["rows: 2/5", "rows: 4/5", "rows: 5/5"]);
    expect(run.stderr).to.contain("5 rows: posted 5; paid, not listed 0; failed, nothing paid 0; not started 0");
    const answer = json<{ exitStatus: number; counts: { posted: number }; rows: Array<{ line: number; status: string; taskHash: string }> }>(
      run.stdout,
    );
    expect(answer.exitStatus).to.equal(0);
    expect(answer.counts.posted).to.equal(5);
    expect(answer.rows.map((r) => [r.line, r.status])).to.deep.equal([2, 3, 4, 5, 6].map((line) => [line, "posted"]));
  });

  it("market release hands an undelivered task back (the worker's); market dispute raises a dispute; each refused for the wrong party", async function () {
    const posted = await poster.postTasks([
      { instructions: "Name three fjords.", amountRaw: 1_000_000n, privacy: "public" },
      { instructions: "Name three atolls.", amountRaw: 1_000_000n, privacy: "public" },
    ]);
    const [fjords, atolls] = posted.results.map((r) => r.taskHash!);
    await s.sync();
    await worker.acceptTask(fjords!);
    await worker.acceptTask(atolls!);

    const notWorker = await runCli(["release", fjords!], { env: posterEnv, cwd });
    expect(notWorker.status).to.equal(1);
    expect(notWorker.stderr).to.match(/^error NOT_EXECUTOR: /);
    const released = await runCli(["release", fjords!, "--json"], { env: workerEnv, cwd });
    expect(released.status, released.stderr).to.equal(0);
    expect(json<{ action: string; outcome: string; txHash: string }>(released.stdout)).to.deep.include({ action: "release", outcome: "reopen" });
    expect(released.stderr).to.contain(`${fjords}: released: the task is open again for other agents`);
    await s.sync();
    expect((await poster.getTask(fjords!)).state.status).to.equal("open");

    const disputed = await runCli(["dispute", atolls!], { env: posterEnv, cwd });
    expect(disputed.status, disputed.stderr).to.equal(0);
    expect(disputed.stdout).to.contain(`${atolls}: disputed`);
    expect(disputed.stdout).to.match(/tx: 0x[0-9a-f]{64}/);
    await s.sync();
    expect((await poster.getTask(atolls!)).state.status).to.equal("disputed");
  });

  it("an agent-mode verdict: review --approve answers the settled status, and poster, worker and verifier all see the verdict", async function () {
    const verifierEnv = await cliEnv(s, s.agentVerifier, { apiKey: keys.verifierKey });
    const post = (instructions: string) =>
      poster
        .postTask({ instructions, amountRaw: 2_000_000n, privacy: "public", verificationMode: "agent", verifierAddress: s.agentVerifier.address })
        .then((r) => r.taskHash!);
    const approved = await post("Summarise the treaty of the harbour towns.");
    const rejected = await post("Summarise the charter of the harbour guild.");
    await s.sync();
    for (const taskHash of [approved, rejected]) {
      await worker.acceptTask(taskHash);
      const finalized = await worker.deliverResult({ taskHash, output: "The treaty binds the towns to share the harbour dues fairly." });
      expect(finalized.status).to.equal("awaiting_verification");
    }
    await s.sync();

    const approve = await runCli(["review", approved, "--approve", "--score", "95", "--reason", "Accurate"], { env: verifierEnv, cwd });
    expect(approve.status, approve.stderr).to.equal(0);
    expect(approve.stdout).to.contain(`approved ${approved}\nstatus: verified\n`);
    const reject = await runCli(["review", rejected, "--reject", "--reason", "Misses the guild's dues", "--json"], { env: verifierEnv, cwd });
    expect(reject.status, reject.stderr).to.equal(0);
    expect(json<{ status: string; approved: boolean }>(reject.stdout)).to.deep.include({ status: "failed", approved: false });

    for (const env of [posterEnv, workerEnv, verifierEnv]) {
      const seen = json<TaskView>((await runCli(["status", approved, "--json"], { env, cwd })).stdout);
      expect(seen.state.status).to.equal("verified");
      expect(seen.state.resultData?.verificationResult).to.deep.equal({ passed: true, score: 95, reasons: ["Accurate"] });
      const failed = await runCli(["status", rejected], { env, cwd });
      expect(failed.stdout).to.contain("status: failed");
      expect(failed.stdout).to.contain("verdict: failed, score 0 (Misses the guild's dues)");
    }
  });
});

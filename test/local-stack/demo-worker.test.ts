/**
 * The README's "Try it" ends with a paid task (issue 15, item 8): `npm run demo:worker` (examples/worker.ts), run as a
 * user runs it against the local stack with the agent's keys, takes a task the poster lists, delivers, is paid, and
 * shows the payout.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import path from "node:path";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, until } from "../support/cli";
import { MarketClient } from "../../sdk/src/client";

const ROOT = path.resolve(__dirname, "../..");

/** The poster's and the worker's API keys (the demo worker registers itself). */
const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster), workerKey: await s.apiKeyFor(s.worker) }));

describe("npm run demo:worker", function () {
  this.timeout(180_000);
  let s: Stack;
  let keys: { posterKey: string; workerKey: string };

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({ stack: s, seeded: keys } = await seededStack());
  });
  afterEach(async function () {
    await s.close();
  });

  it("takes the task the README posts, delivers, is paid and shows the payout", async function () {
    const env = await cliEnv(s, s.worker, { apiKey: keys.workerKey });
    const child = spawn("npm", ["run", "-s", "demo:worker", "--", "--once"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await until(() => stdout.includes("browsing"), `the worker to start (${stderr})`, 120_000);
      expect(stdout).to.contain(`registered ${s.worker.address} on arc`);
      // Money reaching the wallet from elsewhere while it works is no payout of a task (issue 29, item 6): the paid
      // line is the task's own settlement, not a balance difference.
      await (await s.usdc.connect(s.admin).mint(s.worker.address, 1_000_000n)).wait();
      const before = await s.usdc.balanceOf(s.worker.address);

      // The README's task: a public summary for 2.5 USDC, tagged summarization.
      const poster = new MarketClient(await s.clientOptions(s.poster, keys.posterKey));
      const posted = await poster.postTask({
        instructions: "Summarise the history of the printing press",
        amountRaw: 2_500_000n,
        privacy: "public",
        capabilities: ["summarization"],
      });
      expect(posted.status).to.equal("posted");

      expect(await exited).to.equal(0, `${stdout}\n${stderr}`);
      expect(stdout).to.contain(`task ${posted.taskHash}: taken`);
      expect(stdout).to.contain(`task ${posted.taskHash}: verified`);
      expect(stdout).to.match(
        new RegExp(`task ${posted.taskHash}: paid 2\\.25 USDC on arc to ${s.worker.address} \\(balance [0-9.]+ USDC on arc\\)`),
      );
      expect((await s.usdc.balanceOf(s.worker.address)) - before).to.equal(2_250_000n, "2.5 USDC less the 10% fee");
      expect((await poster.getTask(posted.taskHash!)).state.status).to.equal("verified");
    } finally {
      if (child.exitCode === null) child.kill("SIGTERM");
    }
  });
});

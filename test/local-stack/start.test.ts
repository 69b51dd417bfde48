/**
 * `npm start` as a user runs it (`hardhat run --network localhost scripts/start.ts`): on ports moved by
 * MARKET_CHAIN_PORT and PORT alone, and a second start on the same ports or data folder, which must refuse without
 * touching the first one's chain or data.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { JsonRpcProvider } from "ethers";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { freePort, portIsFree } from "../../scripts/lib/local-chain";
import { MockUSDC__factory } from "../../typechain-types";
import { MarketClient } from "../../sdk/src/client";
import { CLI_MAIN, ensureCliBuilt } from "../support/cli";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");
const CLI = require.resolve("hardhat/internal/cli/cli");

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts `npm start`'s script with `env`; resolves with the process once it prints that it is ready. */
async function startStack(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; output: () => string }> {
  // Its own process group: `hardhat run` starts the script in a child process, which a signal to the CLI alone would orphan.
  const child = spawn(process.execPath, [CLI, "run", "--network", "localhost", "scripts/start.ts"], { cwd: ROOT, env, detached: true });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 120_000;
  while (!output.includes("Press Ctrl-C")) {
    const failure =
      child.exitCode !== null ? `npm start exited (${child.exitCode})` : Date.now() > deadline ? "npm start was not ready in time" : undefined;
    if (failure) {
      await stopGroup(child);
      throw new Error(`${failure}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { child, output: () => output };
}

/** Stops a started stack and everything it started (the script and its chains): SIGTERM to the group, SIGKILL after 20 s. */
async function stopGroup(child: ChildProcess): Promise<void> {
  const group = -(child.pid as number);
  const alive = () => {
    try {
      process.kill(group, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (alive()) process.kill(group, "SIGTERM");
  const deadline = Date.now() + 20_000;
  while (alive() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
  if (alive()) process.kill(group, "SIGKILL");
}

/** Runs a second start to its end (it must refuse at once). */
async function startToExit(env: NodeJS.ProcessEnv): Promise<Exit> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, "run", "--network", "localhost", "scripts/start.ts"], {
      cwd: ROOT,
      env,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? null, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

describe("npm start", function () {
  this.timeout(300_000);
  let work: string;
  let env: NodeJS.ProcessEnv;
  let first: { child: ChildProcess; output: () => string };
  let chainPort: number;
  let apiPort: number;
  let zeroGPort: number;
  /** The repository's own deployments/localhost.json before the start: a stack writes under its data folder only. */
  let repoRecord: string | undefined;
  const REPO_RECORD = path.join(ROOT, "deployments", "localhost.json");
  /** A value the start printed, `NAME=value`, after the line holding `after`. */
  const printed = (name: string, after: string) => {
    const block = first.output().slice(first.output().indexOf(after));
    return new RegExp(`${name}=(\\S+)`).exec(block)![1]!;
  };

  before(async () => {
    work = mkdtempSync(path.join(tmpdir(), "market-start-"));
    [chainPort, apiPort, zeroGPort] = [await freePort(), await freePort(), await freePort()];
    env = { ...process.env };
    // What a user's shell would not hold: the stack's own locations come from the variables under test only.
    for (const name of ["LOCAL_RPC_URL", "HARDHAT_NETWORK", "DATABASE_URL", "SQLITE_PATH", "BLOB_DIR", "MARKET_DATA_DIR"]) delete env[name];
    env = {
      ...env,
      MARKET_CHAIN_PORT: String(chainPort),
      MARKET_0G_CHAIN_PORT: String(zeroGPort),
      PORT: String(apiPort),
      MARKET_LOCAL_DATA_DIR: path.join(work, "data"),
      // As the README says to post on the local 0g chain too.
      POSTABLE_CHAINS: "arc,0g",
    };
    delete env.DEPLOYMENTS_DIR;
    repoRecord = existsSync(REPO_RECORD) ? readFileSync(REPO_RECORD, "utf8") : undefined;
    first = await startStack(env);
  });

  after(async () => {
    if (first) await stopGroup(first.child);
    rmSync(work, { recursive: true, force: true });
  });

  it("moves the chain, the deploy and the printed exports with MARKET_CHAIN_PORT alone", async () => {
    const output = first.output();
    expect(output).to.include(`MARKET_RPC_ARC=http://127.0.0.1:${chainPort}`);
    expect(output).to.include(`MARKET_CHAIN_PORT=${chainPort}`);
    expect(output).to.include(`http://127.0.0.1:${apiPort}`);
    const health = await fetch(`http://127.0.0.1:${apiPort}/health`);
    expect(health.status).to.equal(200);
    // Everything it wrote is under its data folder, the deployment records too; the repository's record is untouched.
    const records = path.join(work, "data", "deployments");
    expect(existsSync(path.join(records, "localhost.json"))).to.equal(true);
    expect(existsSync(path.join(records, "0g.json"))).to.equal(true);
    expect(existsSync(REPO_RECORD) ? readFileSync(REPO_RECORD, "utf8") : undefined).to.equal(repoRecord);
    // An operator command on --network localhost follows the printed exports.
    const deployments = printed("DEPLOYMENTS_DIR", "export MARKET_CHAIN_PORT");
    expect(deployments).to.equal(records);
    const { stdout } = await run(process.execPath, [CLI, "--network", "localhost", "escrow:status"], {
      cwd: ROOT,
      env: { ...env, DEPLOYMENTS_DIR: deployments },
    });
    expect(stdout).to.match(/fee/i);
  });

  it("says what it does: that it resets all state, a line per phase, export lines, the next steps and an MCP config", async () => {
    const output = first.output();
    expect(output).to.contain("Every start resets all its state: new chains, an empty database and new keys");
    const phases = [...output.matchAll(/^npm start \[(\d)\/5\] /gm)].map((m) => Number(m[1]));
    expect(phases).to.deep.equal([1, 2, 3, 4, 5]);
    expect(output).to.match(/Demo poster {3}0x[0-9a-fA-F]{40}\n {2}export MARKET_API_KEY=sk_\S+\n {2}export MARKET_PRIVATE_KEY=0x[0-9a-f]{64}/);
    expect(output).to.contain('Next steps (README, "Try it")');
    const json = output.slice(output.indexOf("with this config:") + "with this config:".length, output.indexOf("(`npx market mcp --print-config`"));
    const config = JSON.parse(json) as { mcpServers: { market: { command: string; args: string[]; env: Record<string, string> } } };
    expect(path.isAbsolute(config.mcpServers.market.command)).to.equal(true);
    expect(config.mcpServers.market.args[1]).to.equal("mcp");
    expect(config.mcpServers.market.env).to.deep.include({
      MARKET_API_URL: `http://127.0.0.1:${apiPort}`,
      MARKET_API_KEY: printed("MARKET_API_KEY", "Demo poster"),
      MARKET_RPC_ARC: `http://127.0.0.1:${chainPort}`,
    });
  });

  it("posts a task file with a chain column from the CLI: each row listed on its own chain (the 0g node has its own chain id)", async () => {
    const zeroG = new JsonRpcProvider(`http://127.0.0.1:${zeroGPort}`);
    expect((await zeroG.getNetwork()).chainId).to.equal(31338n);
    zeroG.destroy();
    ensureCliBuilt();
    const exports = first.output().slice(first.output().indexOf("export MARKET_API_URL="));
    const variables = Object.fromEntries([...exports.split("\n")[0]!.matchAll(/(MARKET_\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!] as const)) as Record<
      string,
      string
    >;
    const file = path.join(work, "mixed.csv");
    const stamp = Date.now();
    writeFileSync(
      file,
      `instructions,reward,privacy,capabilities,chain\n` +
        `"Summarise the history of the printing press ${stamp}",1.5,public,summarization,0g\n` +
        `"Summarise the history of the telegraph ${stamp}",1,public,summarization,\n` +
        `"Summarise the history of the radio ${stamp}",2,public,summarization,arc\n`,
    );
    const cliEnvironment = {
      ...env,
      ...variables,
      MARKET_API_KEY: printed("MARKET_API_KEY", "Demo poster"),
      MARKET_PRIVATE_KEY: printed("MARKET_PRIVATE_KEY", "Demo poster"),
      MARKET_STATE_DIR: path.join(work, "cli-state"),
    };
    const { stdout } = await run(process.execPath, [CLI_MAIN, "--json", "post-tasks", "--file", file, "--yes"], {
      cwd: work,
      env: cliEnvironment,
    });
    const answer = JSON.parse(stdout) as { exitStatus: number; chains: Array<{ chain: string; rows: Array<{ status: string; taskHash: string }> }> };
    expect(answer.exitStatus).to.equal(0);
    expect(answer.chains.map((c) => [c.chain, c.rows.map((r) => r.status)])).to.deep.equal([
      ["arc", ["posted", "posted"]],
      ["0g", ["posted"]],
    ]);
    const client = new MarketClient({ apiKey: "", baseUrl: `http://127.0.0.1:${apiPort}` });
    // Listed at once; shown once its chain's indexer has the funding block.
    const chainOf = async (taskHash: string) => {
      for (let tries = 0; ; tries++) {
        try {
          return (await client.getTask(taskHash)).meta.chain;
        } catch (error) {
          if (tries > 50) throw error;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    };
    expect(await chainOf(answer.chains[1]!.rows[0]!.taskHash)).to.equal("0g");
    expect(await chainOf(answer.chains[0]!.rows[0]!.taskHash)).to.equal("arc");
    // Each chain's rows have their own results file and journal: a rerun pays nothing.
    expect(existsSync(path.join(work, "mixed.csv.results.csv"))).to.equal(true);
    expect(existsSync(path.join(work, "mixed.csv.results.0g.csv"))).to.equal(true);
    const rerun = await run(process.execPath, [CLI_MAIN, "--json", "post-tasks", "--file", file, "--yes"], { cwd: work, env: cliEnvironment });
    const again = JSON.parse(rerun.stdout) as { exitStatus: number; chains: Array<{ counts: { posted: number } }> };
    expect(again.exitStatus).to.equal(0);
    expect(again.chains.map((c) => c.counts.posted)).to.deep.equal([2, 1]);
  });

  it("refuses a second start on the same ports without touching the first one's chain or data", async () => {
    const deployment = JSON.parse(readFileSync(path.join(work, "data", "deployments", "localhost.json"), "utf8")) as { token: string };
    const provider = new JsonRpcProvider(`http://127.0.0.1:${chainPort}`);
    const usdc = MockUSDC__factory.connect(deployment.token, provider);
    const supply = await usdc.totalSupply();
    const blocks = await provider.getBlockNumber();

    const second = await startToExit(env);
    expect(second.code).to.equal(1);
    const lines = second.stderr.trim().split("\n");
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include(`port ${chainPort} on 127.0.0.1 is in use`).and.include("nothing was changed");

    expect(await usdc.totalSupply()).to.equal(supply);
    expect(await provider.getBlockNumber()).to.equal(blocks);
    expect(existsSync(path.join(work, "data", "market.sqlite"))).to.equal(true);
    expect((await fetch(`http://127.0.0.1:${apiPort}/health`)).status).to.equal(200);
    provider.destroy();
  });

  it("compares deadlines with chain time: a task expires through the API when the chain's clock passes its deadline", async () => {
    const rpc = `http://127.0.0.1:${chainPort}`;
    const client = new MarketClient({
      apiKey: printed("MARKET_API_KEY", "Demo poster"),
      baseUrl: `http://127.0.0.1:${apiPort}`,
      executor: { privateKey: printed("MARKET_PRIVATE_KEY", "Demo poster"), rpcUrls: { arc: rpc } },
      escrows: { arc: printed("MARKET_ESCROW_ARC", "export") },
    });
    const posted = await client.postTask({
      instructions: "Name three uses of a printing press",
      amountRaw: 1_000_000n,
      privacy: "public",
      durationSeconds: 3600,
    });
    expect(posted.status).to.equal("posted");
    const taskHash = posted.taskHash!;
    /** The task's status once the indexer has it. */
    const statusNow = () =>
      client.getTask(taskHash).then(
        (t) => t.state.status,
        () => "not indexed",
      );
    const until = async (wanted: (status: string) => boolean) => {
      const deadline = Date.now() + 10_000;
      let status = await statusNow();
      while (!wanted(status) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        status = await statusNow();
      }
      return status;
    };
    expect(await until((s) => s !== "not indexed")).to.equal("open");

    const provider = new JsonRpcProvider(rpc);
    await provider.send("evm_increaseTime", [2 * 3600]);
    await provider.send("evm_mine", []);
    provider.destroy();
    expect(await until((s) => s !== "open")).to.equal("expired");
    const browse = await client.browseA2ATasks();
    expect(browse.tasks.map((t) => t.meta.taskHash)).to.not.include(taskHash);
  });

  it("checks every port before touching anything: a busy API port alone refuses the start, no chain started", async () => {
    const [freeChain, freeZeroG] = [await freePort(), await freePort()];
    const busy = createServer((_request, response) => response.end("busy"));
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const busyPort = (busy.address() as AddressInfo).port;
    try {
      const second = await startToExit({
        ...env,
        MARKET_CHAIN_PORT: String(freeChain),
        MARKET_0G_CHAIN_PORT: String(freeZeroG),
        PORT: String(busyPort),
        MARKET_LOCAL_DATA_DIR: path.join(work, "other-data"),
      });
      expect(second.code).to.equal(1);
      const lines = second.stderr.trim().split("\n");
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include(`port ${busyPort} on 127.0.0.1 is in use`).and.include("set PORT").and.include("nothing was changed");
      // Nothing was started or written: both chain ports are still free, no data folder was made.
      expect(await portIsFree(freeChain)).to.equal(true);
      expect(await portIsFree(freeZeroG)).to.equal(true);
      expect(existsSync(path.join(work, "other-data"))).to.equal(false);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it("refuses a second start on other ports over the same data folder", async () => {
    const second = await startToExit({
      ...env,
      MARKET_CHAIN_PORT: String(await freePort()),
      MARKET_0G_CHAIN_PORT: String(await freePort()),
      PORT: String(await freePort()),
    });
    expect(second.code).to.equal(1);
    expect(second.stderr.trim()).to.include("is in use by process").and.include("MARKET_LOCAL_DATA_DIR");
    expect(existsSync(path.join(work, "data", "market.sqlite"))).to.equal(true);
  });

  it("stops on Ctrl-C quietly and in order: a stopping line, no error output, chains stopped", async () => {
    const before = first.output().length;
    const exited = new Promise<void>((resolve) => first.child.once("close", () => resolve()));
    const at = Date.now();
    // What a terminal's Ctrl-C does: SIGINT to the foreground process group.
    process.kill(-(first.child.pid as number), "SIGINT");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20_000))]);
    const said = first.output().slice(before);
    expect(said).to.contain("npm start: stopping… (the API and the indexers, then the chains");
    expect(said).to.contain("npm start: stopped");
    expect(said).to.not.match(/"level":50|fetch failed|Error:/);
    expect(Date.now() - at).to.be.below(15_000);
    // The chains went with it (each node takes its own moment to close its port).
    const deadline = Date.now() + 10_000;
    const bothFree = async () => (await portIsFree(chainPort)) && (await portIsFree(zeroGPort));
    while (!(await bothFree()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await portIsFree(chainPort), "the arc chain's port").to.equal(true);
    expect(await portIsFree(zeroGPort), "the 0g chain's port").to.equal(true);
  });
});

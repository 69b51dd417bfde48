/**
 * The server killed (SIGKILL) while a hosted agent is mid-task: its model call is in flight. Started again on the same
 * database, the agent is running again, continues the task it holds and delivers it once.
 */
import { expect } from "chai";
import hre from "hardhat";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { deployEscrowFixture } from "../fixtures/escrow";
import { serveNetwork } from "../indexer/helpers";
import { privateKeyOf, TEST_MASTER_KEY } from "../server/harness";
import { startModelServer } from "../support/model-server";
import { MarketClient } from "../../sdk/src/client";
import { TaskEscrow__factory } from "../../typechain-types";
import { agentOptions, fundGas, until } from "./helpers";

const ROOT = path.resolve(__dirname, "../..");

interface ServerProcess {
  child: ChildProcess;
  url: string;
  output(): string;
}

/** `npm run server`'s entry point as its own process, configured by the environment; resolves once it listens. */
async function startServerProcess(env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const child = spawn(process.execPath, [require.resolve("ts-node/dist/bin.js"), "--transpile-only", path.join(ROOT, "server/main.ts")], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), 90_000);
    const check = () => {
      const found = /market API on (http:\/\/\S+)/.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    };
    child.stdout.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}):\n${output}`));
    });
  });
  return { child, url, output: () => output };
}

async function apiKeyOver(url: string, signer: HardhatEthersSigner): Promise<string> {
  const post = async <T>(route: string, body: unknown, headers: Record<string, string> = {}): Promise<T> => {
    const response = await fetch(`${url}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    const parsed = (await response.json()) as { data: T };
    return parsed.data;
  };
  const nonce = await post<{ message: string }>("/api/v1/auth/nonce", { address: signer.address });
  const session = await post<{ token: string }>("/api/v1/auth/verify", {
    message: nonce.message,
    signature: await signer.signMessage(nonce.message),
  });
  return (await post<{ key: string }>("/api/v1/api-keys", { name: "restart" }, { authorization: `Bearer ${session.token}` })).key;
}

describe("hosted agents: a server killed mid-task", function () {
  this.timeout(400_000);

  it("comes back with the agent running, and the task it held is delivered once", async function () {
    const base = await loadFixture(deployEscrowFixture);
    const rpc = await serveNetwork();
    const model = await startModelServer();
    const dir = mkdtempSync(path.join(tmpdir(), "market-restart-"));
    const servers: ServerProcess[] = [];
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        HOST: "127.0.0.1",
        PORT: "0",
        SQLITE_PATH: path.join(dir, "market.sqlite"),
        BLOB_DIR: path.join(dir, "blobs"),
        CHAIN_ARC_RPC_URL: rpc.url,
        CHAIN_ARC_DEPLOYMENT: "none",
        CHAIN_ARC_ESCROW: base.escrowAddress,
        CHAIN_ARC_TOKEN: base.token,
        CHAIN_ARC_CHAIN_ID: String((await hre.ethers.provider.getNetwork()).chainId),
        CHAIN_ARC_START_BLOCK: String(base.deployment.block),
        MARKET_VERIFIER_PRIVATE_KEY: privateKeyOf(base.verifier),
        MARKET_MASTER_KEY: TEST_MASTER_KEY,
        HOSTED_ALLOW_PRIVATE_NETWORKS: "true",
        HOSTED_BROWSE_INTERVAL_MS: "200",
        INDEXER_POLL_MS: "100",
        INDEXER_IN_WORKER: "false",
        OFFER_WINDOW_MS: "0",
        LOG_LEVEL: "warn",
      };
      if (process.env.DEBUG_RESTART) console.log("starting", new Date().toISOString());
      const first = await startServerProcess(env);
      if (process.env.DEBUG_RESTART) console.log("started", first.url, new Date().toISOString());
      servers.push(first);
      const options = async (signer: HardhatEthersSigner, url: string, key?: string) => ({
        apiKey: key ?? (await apiKeyOver(url, signer)),
        baseUrl: url,
        executor: { privateKey: privateKeyOf(signer), rpcUrls: { arc: rpc.url } },
        escrows: { arc: base.escrowAddress },
      });
      const ownerOptions = await options(base.stranger, first.url);
      const owner = new MarketClient(ownerOptions);
      const posterOptions = await options(base.poster, first.url);
      const poster = new MarketClient(posterOptions);

      // The first model call hangs: the agent is mid-task when the server dies.
      let answering = false;
      model.setScript(() =>
        answering ? { content: "Summary: the incident report lists three outages and the fix for each of them." } : { hang: true },
      );
      const agent = (await owner.deployAgent(agentOptions(model))).agent;
      await fundGas(base.stranger, agent.address);
      expect((await owner.startAgent({ agentId: agent.id })).state).to.equal("running");
      const task = (
        await poster.postTask({
          instructions: "Summarise the incident report.",
          amountRaw: 2_000_000n,
          privacy: "public",
          capabilities: ["summarization"],
          targetExecutor: agent.address,
        })
      ).taskHash!;
      await until(() => model.hangingCount() === 1, 60_000, "the agent's model call");
      if (process.env.DEBUG_RESTART) console.log("mid-task", new Date().toISOString());

      const killed = new Promise((resolve) => first.child.once("exit", resolve));
      first.child.kill("SIGKILL");
      await killed;
      if (process.env.DEBUG_RESTART) console.log("killed", new Date().toISOString());
      answering = true;
      const escrow = TaskEscrow__factory.connect(base.escrowAddress, hre.ethers.provider);
      expect((await escrow.getTask(task)).worker).to.equal(agent.address);

      const second = await startServerProcess(env);
      servers.push(second);
      if (process.env.DEBUG_RESTART) console.log("restarted", second.url, new Date().toISOString());
      const viewer = new MarketClient({ ...posterOptions, baseUrl: second.url });
      await until(async () => (await viewer.getTask(task)).state.status === "verified", 120_000, "the task verified after the restart");
      const agentView = (await (await fetch(`${second.url}/api/v1/agents/${agent.id}`)).json()) as { data: { agent: { state: string } } };
      expect(agentView.data.agent.state).to.equal("running");
      // Delivered once: one submission on chain, paid once.
      expect((await escrow.getTask(task)).rounds).to.equal(1n);
      expect(await base.usdc.balanceOf(agent.address)).to.equal(1_800_000n);
      const view = await viewer.getTask(task);
      expect(view.state.rounds).to.equal(1);
      expect(view.state.resultData?.output).to.equal("Summary: the incident report lists three outages and the fix for each of them.");
      expect(second.output()).not.to.include(TEST_MASTER_KEY);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${servers.map((s, i) => `--- server ${i + 1}:\n${s.output().slice(-3000)}`).join("\n")}`, {
        cause: error,
      });
    } finally {
      // A graceful stop, or a kill after a few seconds: the test never waits on a stuck child.
      await Promise.all(
        servers.map(async ({ child }) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise((resolve) => child.once("exit", resolve));
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
          await exited;
          clearTimeout(timer);
        }),
      );
      await model.close();
      await rpc.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The server killed (SIGKILL) while a hosted agent is mid-task: its model call is in flight. Started again on the same
 * database, the agent is running again, continues the task it holds and delivers it once.
 */
import { expect } from "chai";
import hre from "hardhat";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { deployEscrowFixture } from "../fixtures/escrow";
import { serveNetwork } from "../indexer/helpers";
import { privateKeyOf, TEST_MASTER_KEY, testDatabase } from "../server/harness";
import { startModelServer } from "../support/model-server";
import { MarketClient } from "../../sdk/src/client";
import { TaskEscrow__factory } from "../../typechain-types";
import { agentOptions, fundGas, until } from "./helpers";
import { apiKeyOver, serverEnv, startServerProcess, type ServerProcess } from "../support/server-process";

describe("hosted agents: a server killed mid-task", function () {
  this.timeout(400_000);

  it("comes back with the agent running, and the task it held is delivered once", async function () {
    const base = await loadFixture(deployEscrowFixture);
    const rpc = await serveNetwork();
    const model = await startModelServer();
    const dir = mkdtempSync(path.join(tmpdir(), "market-restart-"));
    // SQLite, or under `npm run test:postgres` a PostgreSQL database of its own.
    const postgres = process.env.TEST_DATABASE_URL ? await testDatabase() : undefined;
    const servers: ServerProcess[] = [];
    try {
      const env = await serverEnv(base, {
        rpcUrl: rpc.url,
        dir,
        ...(postgres?.url ? { databaseUrl: postgres.url } : {}),
        extra: { HOSTED_BROWSE_INTERVAL_MS: "200", OFFER_WINDOW_MS: "0" },
      });
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

      await first.kill();
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
      await Promise.all(servers.map((server) => server.stop()));
      await model.close();
      await rpc.close();
      rmSync(dir, { recursive: true, force: true });
      await postgres?.drop();
    }
  });
});

/**
 * An owner's post_tasks for a hosted agent's custodied wallet over the remote /mcp endpoint, with the API server
 * killed (SIGKILL) after the funding left it and before the task was listed. A server started again on the same
 * database, asked the same call under the same idempotencyKey, lists the task without paying again: the agent's
 * wallet pays exactly once.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { deployEscrowFixture } from "../fixtures/escrow";
import { serveNetwork } from "../indexer/helpers";
import { privateKeyOf, TEST_MASTER_KEY, testDatabase } from "../server/harness";
import { startRpcProxy } from "../support/rpc-proxy";
import { apiKeyOver, serverEnv, startServerProcess, type ServerProcess } from "../support/server-process";
import { MarketClient } from "../../sdk/src/client";
import { fundGas, until } from "../hosted/helpers";
import { httpMcp, type Mcp } from "./helpers";

const AMOUNT = 1_250_000n;
const FUNDS = 5_000_000n;

describe("mcp: a custodied spend resumed after the server is killed between funding and listing", function () {
  this.timeout(400_000);

  it("lists the funded task from the saved journal on a new server, and the agent's wallet pays once", async function () {
    const base = await loadFixture(deployEscrowFixture);
    const network = await serveNetwork();
    // The server's RPC: every transaction to the escrow can be held before it reaches the chain.
    const rpc = await startRpcProxy(network.url, { maxLogBlocks: 1_000_000, logDelayMs: 0 });
    const dir = mkdtempSync(path.join(tmpdir(), "market-custody-"));
    const postgres = process.env.TEST_DATABASE_URL ? await testDatabase() : undefined;
    const servers: ServerProcess[] = [];
    const clients: Mcp[] = [];
    try {
      // A hold left by the killed server lapses before the next one asks.
      const env = await serverEnv(base, {
        rpcUrl: rpc.url,
        dir,
        ...(postgres?.url ? { databaseUrl: postgres.url } : {}),
        extra: { HOSTED_WALLET_HOLD_MS: "1500" },
      });
      const first = await startServerProcess(env);
      servers.push(first);
      const ownerKey = await apiKeyOver(first.url, base.stranger);
      const owner = new MarketClient({
        apiKey: ownerKey,
        baseUrl: first.url,
        executor: { privateKey: privateKeyOf(base.stranger), rpcUrls: { arc: network.url } },
        escrows: { arc: base.escrowAddress },
      });
      const { agent } = await owner.deployAgent({
        displayName: "Custodied poster",
        instructions: "Answer briefly.",
        model: { baseUrl: "http://127.0.0.1:9/v1", name: "m" },
        start: false,
      });
      await fundGas(base.stranger, agent.address);
      await (await base.usdc.connect(base.admin).mint(agent.address, FUNDS)).wait();
      const escrowBefore = await base.usdc.balanceOf(base.escrowAddress);
      const headers = { "x-market-agent": String(agent.id) };
      const args = {
        tasks: [{ instructions: "List the planets of the solar system in order from the sun.", amount: AMOUNT.toString(), privacy: "public" }],
        idempotencyKey: "killed-mid-run",
      };

      const firstMcp = await httpMcp(first.url, ownerKey, headers);
      clients.push(firstMcp);
      const quote = await firstMcp.call("post_tasks", args);
      expect(quote.data).to.deep.include({ toPost: 1, escrow: AMOUNT.toString(), payFrom: agent.address });
      rpc.holdSendsTo(base.escrowAddress);
      const confirming = firstMcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId }).catch((error: unknown) => error);
      // The funding left the server (its journal entry saved first); the server dies before it is mined and listed.
      await until(() => rpc.heldSends === 1, 60_000, "the funding transaction");
      await first.kill();
      rpc.releaseSends();
      await until(async () => (await base.usdc.balanceOf(base.escrowAddress)) === escrowBefore + AMOUNT, 30_000, "the funding mined");
      expect(await confirming).to.be.instanceOf(Error);
      expect(await base.usdc.balanceOf(agent.address)).to.equal(FUNDS - AMOUNT);

      const second = await startServerProcess(env);
      servers.push(second);
      const secondMcp = await httpMcp(second.url, ownerKey, headers);
      clients.push(secondMcp);
      // Paid by the killed call: only to be listed, nothing to pay.
      const again = await secondMcp.call("post_tasks", args);
      expect(again.isError, again.text).to.equal(false);
      expect(again.data).to.deep.include({ tasks: 1, alreadyPosted: 0, toPost: 0, escrow: "0" });
      expect(again.text).to.contain("1 paid earlier and only to be listed");
      const done = await secondMcp.call("post_tasks", { ...args, confirm: true, quoteId: again.data.quoteId });
      expect(done.isError, done.text).to.equal(false);
      expect(done.data).to.deep.include({ tasks: 1, posted: 1, alreadyPosted: 0, unlisted: 0, escrowPaid: "0" });
      const taskHash = (done.data.results as Array<{ taskHash: string }>)[0]!.taskHash;

      expect(await base.usdc.balanceOf(agent.address)).to.equal(FUNDS - AMOUNT);
      expect(await base.usdc.balanceOf(base.escrowAddress)).to.equal(escrowBefore + AMOUNT);
      const viewer = new MarketClient({ apiKey: ownerKey, baseUrl: second.url, escrows: { arc: base.escrowAddress } });
      await until(async () => (await viewer.getTask(taskHash).catch(() => undefined))?.meta.poster === agent.address, 30_000, "the task listed");
      for (const server of servers) expect(server.output()).not.to.include(TEST_MASTER_KEY);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${servers.map((s, i) => `--- server ${i + 1}:\n${s.output().slice(-3000)}`).join("\n")}`, {
        cause: error,
      });
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await Promise.all(servers.map((server) => server.stop()));
      await rpc.close();
      await network.close();
      rmSync(dir, { recursive: true, force: true });
      await postgres?.drop();
    }
  });
});

/**
 * Scale-out (docs/scaling.md): API processes (`npm run server`, as child processes) on one PostgreSQL database. Both
 * answer reads and writes; one indexes the chain and one sends the verifier key's transactions, each under a lease.
 * The leader is killed with SIGKILL in the middle of a catch-up, and later in the middle of sending assignments: the
 * other process takes over within seconds, no event is missed or stored twice, no nonce is used twice, no transaction
 * is sent twice, and every accept is answered. Runs under `npm run test:postgres` (it needs TEST_DATABASE_URL).
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import { deployEscrowFixture, POSTER_FUNDS } from "../fixtures/escrow";
import { chainConfig, expectTasksMatchContract, mineBlocks, randomActivity, serveNetwork, waitFor } from "../indexer/helpers";
import { privateKeyOf, testDatabase } from "./harness";
import { apiKeyOver, postJson, startServerProcess, type ServerProcess } from "../support/server-process";
import { startRpcProxy } from "../support/rpc-proxy";
import { MarketClient } from "../../sdk/src/client";
import { readCursor } from "../../server/indexer";

/** Every lease is tried again this often: a dead leader's work is taken over within about this long. */
const LEASE_RETRY_MS = 300;
/** How long a takeover may take under a loaded test machine (a worker thread under ts-node starts in it). */
const TAKEOVER_MS = 15_000;

/** A chain with a few hundred blocks of escrow activity before the servers start: their first catch-up. */
async function backlogFixture() {
  const fixture = await deployEscrowFixture();
  await fixture.usdc.mint(fixture.poster.address, POSTER_FUNDS);
  await randomActivity(fixture, { seed: 61, steps: 60, tag: "scale-out" });
  await mineBlocks(150);
  await randomActivity(fixture, { seed: 62, steps: 60, tag: "scale-out-late" });
  await mineBlocks(150);
  await randomActivity(fixture, { seed: 63, steps: 40, tag: "scale-out-last" });
  return fixture;
}

interface Health {
  leases: string[];
}

async function leasesOf(server: ServerProcess): Promise<string[]> {
  const response = await fetch(`${server.url}/health`);
  return ((await response.json()) as { data: Health }).data.leases;
}

/** The one live process holding `lease` (asserting no other does), or undefined when none does. */
async function holderOf(servers: ServerProcess[], lease: string): Promise<ServerProcess | undefined> {
  const holders: ServerProcess[] = [];
  for (const server of servers) if ((await leasesOf(server)).includes(lease)) holders.push(server);
  expect(holders.length, `holders of ${lease}`).to.be.at.most(1);
  return holders[0];
}

describe("scale-out: API processes on one PostgreSQL database", function () {
  this.timeout(600_000);

  before(function () {
    // SQLite serves one process (test/server/scaling.test.ts checks the refusal); this runs in the PostgreSQL pass.
    if (!process.env.TEST_DATABASE_URL) this.skip();
  });

  it("share reads and writes; a leader killed mid-catch-up and mid-send is taken over, nothing missed, doubled or sent twice", async function () {
    const fixture = await loadFixture(backlogFixture);
    const chain = chainConfig(fixture);
    const head = await hre.ethers.provider.getBlockNumber();
    const network = await serveNetwork();
    // A restrictive provider: at most 4 blocks per eth_getLogs, each answer 30 ms late, so the catch-up takes seconds.
    const rpc = await startRpcProxy(network.url, { maxLogBlocks: 4, logDelayMs: 30 });
    const { db, url: databaseUrl, drop } = await testDatabase();
    const servers: ServerProcess[] = [];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: "0",
      // One public URL for every process, as behind a load balancer: a sign-in started on one finishes on another.
      MARKET_PUBLIC_URL: "http://127.0.0.1:3000",
      DATABASE_URL: databaseUrl,
      BLOB_STORE: "database",
      CHAIN_ARC_RPC_URL: rpc.url,
      CHAIN_ARC_DEPLOYMENT: "none",
      CHAIN_ARC_ESCROW: fixture.escrowAddress,
      CHAIN_ARC_TOKEN: fixture.token,
      CHAIN_ARC_CHAIN_ID: String((await hre.ethers.provider.getNetwork()).chainId),
      CHAIN_ARC_START_BLOCK: String(fixture.deployment.block),
      MARKET_VERIFIER_PRIVATE_KEY: privateKeyOf(fixture.verifier),
      LEASE_RETRY_MS: String(LEASE_RETRY_MS),
      INDEXER_POLL_MS: "100",
      OFFER_WINDOW_MS: "0",
      ASSIGNMENT_CAP_BASE: "10",
      LOG_LEVEL: "warn",
    };
    const indexerLease = "indexer:arc";
    const senderLease = `sender:arc:${fixture.verifier.address.toLowerCase()}`;
    try {
      // ---- Two processes start while the provider holds every eth_getLogs: neither has indexed anything yet.
      rpc.hold();
      servers.push(...(await Promise.all([startServerProcess(env), startServerProcess(env)])));
      const [first, second] = servers as [ServerProcess, ServerProcess];
      await waitFor(async () => (await holderOf(servers, indexerLease)) !== undefined, TAKEOVER_MS, "an indexer leader");
      await waitFor(async () => (await holderOf(servers, senderLease)) !== undefined, TAKEOVER_MS, "a sender");
      await waitFor(async () => (await holderOf(servers, "hosted-runners")) !== undefined, TAKEOVER_MS, "a hosted runner");
      const indexer = (await holderOf(servers, indexerLease))!;
      const other = indexer === first ? second : first;
      // Both answer reads, the one that does not index too.
      for (const server of servers) expect((await fetch(`${server.url}/api/v1/a2a/tasks`)).status).to.equal(200);

      // ---- The catch-up starts; the leader is killed in its middle.
      rpc.release();
      const start = fixture.deployment.block;
      await waitFor(async () => ((await readCursor(db, "arc"))?.number ?? 0) >= start + (head - start) / 4, 120_000, "a quarter of the catch-up");
      expect(await leasesOf(other)).to.not.include(indexerLease);
      await indexer.kill();
      const killedAt = Date.now();
      const cursorAtKill = (await readCursor(db, "arc"))!.number;
      expect(cursorAtKill, "killed mid-catch-up").to.be.below(head);

      await waitFor(async () => (await leasesOf(other)).includes(indexerLease), TAKEOVER_MS, "the other process to take the indexer over");
      const tookOverIn = Date.now() - killedAt;
      await waitFor(async () => ((await readCursor(db, "arc"))?.number ?? 0) > cursorAtKill, TAKEOVER_MS, "the catch-up to go on");
      const resumedIn = Date.now() - killedAt;
      await waitFor(async () => (await readCursor(db, "arc"))?.number === head, 120_000, "the catch-up to end");
      // The sender and the runners, whoever held them, are now the survivor's too.
      await waitFor(async () => (await leasesOf(other)).length === 3, TAKEOVER_MS, "every lease on the survivor");
      console.log(`      indexer taken over in ${tookOverIn} ms, catch-up resumed ${resumedIn} ms after the kill (${rpc.logCalls} eth_getLogs)`);

      // Every escrow log of the node stored once: the same (block, log index) pairs, no more rows than logs.
      const logs = await hre.ethers.provider.getLogs({ address: fixture.escrowAddress, fromBlock: start, toBlock: head });
      const stored = await db.selectFrom("escrow_events").select(["block_number", "log_index"]).where("chain", "=", "arc").execute();
      expect(stored.length).to.equal(logs.length);
      expect(new Set(stored.map((e) => `${e.block_number}:${e.log_index}`))).to.deep.equal(new Set(logs.map((l) => `${l.blockNumber}:${l.index}`)));
      expect(await expectTasksMatchContract(db, fixture, chain.name)).to.be.greaterThan(50);

      // ---- A process comes back as a follower; writes and reads go to both.
      const follower = await startServerProcess(env);
      servers.push(follower);
      const leader = other;
      expect(await leasesOf(follower)).to.deep.equal([]);

      // A sign-in begun on one process ends on the other; a blob stored through one is read through the other.
      const posterKey = await apiKeyOver(leader.url, fixture.poster, follower.url);
      // The agent: a wallet the activity above never used, so it holds nothing yet.
      const agentKey = await apiKeyOver(follower.url, fixture.stranger, leader.url);
      const stored1 = await postJson<{ rootHash: string }>(
        follower.url,
        "/api/v1/storage/upload",
        { data: Buffer.from("shared bytes").toString("base64") },
        { "x-api-key": posterKey },
      );
      const read = (await (await fetch(`${leader.url}/api/v1/storage/${stored1.rootHash}`)).json()) as { data: { data: string } };
      expect(Buffer.from(read.data.data, "base64").toString()).to.equal("shared bytes");

      const clientOn = (url: string, key: string, signerKey: string) =>
        new MarketClient({
          apiKey: key,
          baseUrl: url,
          executor: { privateKey: signerKey, rpcUrls: { arc: network.url } },
          escrows: { arc: fixture.escrowAddress },
        });
      const agent = clientOn(follower.url, agentKey, privateKeyOf(fixture.stranger));
      await agent.createAgent({ privateKey: privateKeyOf(fixture.stranger), supportedChains: ["arc"], capabilities: ["summarization"] });
      const poster = clientOn(leader.url, posterKey, privateKeyOf(fixture.poster));
      const posted = await poster.postTasks(
        Array.from({ length: 10 }, (_, i) => ({
          instructions: `Summarise report ${i} of the scale-out test in two sentences.`,
          amountRaw: 1_000_000n,
          privacy: "public" as const,
          capabilities: ["summarization"],
        })),
      );
      const tasks = posted.results.map((r) => r.taskHash!);
      expect(tasks).to.have.length(10);
      // The follower lists what was posted through the leader, once the leader's indexer has it.
      await waitFor(
        async () => {
          const answer = (await (await fetch(`${follower.url}/api/v1/a2a/tasks?capabilities=summarization`)).json()) as {
            data: { tasks: Array<{ meta: { taskHash: string } }> };
          };
          const listed = new Set(answer.data.tasks.map((t) => t.meta.taskHash));
          return tasks.every((t) => listed.has(t));
        },
        30_000,
        "the follower to list every task",
      );

      // ---- Accepts through both; the leader signs them all and is killed before any is mined.
      const base = await hre.ethers.provider.getTransactionCount(fixture.verifier.address, "latest");
      await hre.network.provider.send("evm_setAutomine", [false]);
      /** Accepts through `url`; a connection the server dropped (it was killed) is retried through the other process. */
      const accept = async (taskHash: string, url: string) => {
        for (let attempt = 0; attempt < 5; attempt++) {
          try {
            const response = await fetch(`${attempt === 0 ? url : follower.url}/api/v1/a2a/tasks/${taskHash}/accept`, {
              method: "POST",
              headers: { "x-api-key": agentKey },
            });
            return { status: response.status, body: (await response.json()) as { data: { worker: string }; error?: { code: string } } };
          } catch {
            // The process died under the request: ask the other one.
          }
        }
        throw new Error(`accept of ${taskHash} never answered`);
      };
      const accepting = tasks.slice(0, 8).map((taskHash, i) => accept(taskHash, i % 2 === 0 ? leader.url : follower.url));
      const assignments = () => db.selectFrom("outbox").selectAll().where("purpose", "like", "assign:%").execute();
      await waitFor(
        async () => (await assignments()).filter((r) => r.status === "sent").length === 8,
        60_000,
        "the leader to broadcast every assignment",
      );
      await leader.kill();
      const senderKilledAt = Date.now();
      // Two more accepts while the leader is gone: recorded, and signed by whoever sends next.
      accepting.push(...tasks.slice(8).map((taskHash) => accept(taskHash, follower.url)));
      await waitFor(async () => (await leasesOf(follower)).includes(senderLease), TAKEOVER_MS, "the follower to take the sender over");
      const senderTookOverIn = Date.now() - senderKilledAt;
      await waitFor(async () => (await leasesOf(follower)).length === 3, TAKEOVER_MS, "every lease on the follower");
      await hre.network.provider.send("evm_setAutomine", [true]);
      await hre.network.provider.send("evm_mine", []);
      console.log(`      sender taken over in ${senderTookOverIn} ms`);

      // Every accept answered with the assignment.
      const answers = await Promise.all(accepting);
      for (const answer of answers) {
        expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
        expect(answer.body.data.worker).to.equal(fixture.stranger.address);
      }
      // One transaction per task: one entry per purpose, each mined once, at consecutive nonces never used twice.
      const entries = (await assignments()).sort((a, b) => a.nonce! - b.nonce!);
      expect(entries).to.have.length(10);
      expect(new Set(entries.map((e) => e.purpose)).size).to.equal(10);
      expect(entries.map((e) => e.status)).to.deep.equal(Array(10).fill("mined"));
      expect(entries.map((e) => e.nonce)).to.deep.equal(Array.from({ length: 10 }, (_, i) => base + i));
      expect(entries.map((e) => (JSON.parse(e.hashes!) as string[]).length)).to.deep.equal(Array(10).fill(1));
      expect(await hre.ethers.provider.getTransactionCount(fixture.verifier.address, "latest")).to.equal(base + 10);
      for (const taskHash of tasks) {
        expect(await fixture.escrow.queryFilter(fixture.escrow.filters.WorkerAssigned(taskHash)), taskHash).to.have.length(1);
        expect((await fixture.escrow.getTask(taskHash)).worker).to.equal(fixture.stranger.address);
      }
    } catch (error) {
      await hre.network.provider.send("evm_setAutomine", [true]);
      throw new Error(`${(error as Error).message}\n${servers.map((s, i) => `--- server ${i + 1}:\n${s.output().slice(-3000)}`).join("\n")}`, {
        cause: error,
      });
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
      await rpc.close();
      await network.close();
      await drop();
    }
  });
});

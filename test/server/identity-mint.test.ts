/**
 * The identity minting service (server/identity): `requestMint` records the mint and mints the token on `0g` to the
 * owner's wallet through the verifier key's outbox, with `registerFor(owner, cardUrl, [agentWallet, metadataHash])`.
 * A chain that reverts or does not answer leaves the mint pending with its error and a back-off; a later attempt
 * mints it; the caller never sees an error; an agent never gets two tokens.
 */
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import hre from "hardhat";
import { privateKeyOf, startTestServer, type TestServer } from "./harness";
import { createChains, type ChainRegistry } from "../../server/chains";
import { createOutbox, type Outbox } from "../../server/outbox";
import { createIdentityMinting, type IdentityMinting, type MintRequest } from "../../server/identity";
import { identityMetadataHash } from "@market/core/registries";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { AgentIdentity__factory, type AgentIdentity } from "../../typechain-types";
import { ChainRpcProvider } from "../../server/chains/rpc";

const RETRY_MS = 60_000;

/**
 * A JSON-RPC endpoint on loopback in front of the test's Hardhat network, which can be taken down and brought back
 * on the same port: the chain as a remote node that stops answering.
 */
async function rpcEndpoint() {
  const serve = (server: Server) =>
    server.on("request", (request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        const one = async (call: { id: unknown; method: string; params?: unknown[] }) => {
          try {
            return { jsonrpc: "2.0", id: call.id, result: await hre.network.provider.request({ method: call.method, params: call.params ?? [] }) };
          } catch (error) {
            const e = error as { code?: number; message: string; data?: unknown };
            return { jsonrpc: "2.0", id: call.id, error: { code: e.code ?? -32000, message: e.message, data: e.data } };
          }
        };
        const parsed = JSON.parse(body) as Parameters<typeof one>[0] | Array<Parameters<typeof one>[0]>;
        void (Array.isArray(parsed) ? Promise.all(parsed.map(one)) : one(parsed)).then((answer) => {
          response.setHeader("content-type", "application/json");
          response.end(JSON.stringify(answer));
        });
      });
    });
  let server = serve(createServer());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    async down() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
    async up() {
      server = serve(createServer());
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    },
  };
}

describe("server: identity minting", function () {
  let s: TestServer;
  let identity: AgentIdentity;
  let clock: number;
  const now = () => clock;
  const services: IdentityMinting[] = [];
  const outboxes: Outbox[] = [];

  beforeEach(async function () {
    s = await startTestServer({ registries: true, arc: { name: "0g" } });
    identity = AgentIdentity__factory.connect(s.chainConfig.identity!.address, hre.ethers.provider);
    clock = Date.now();
  });
  afterEach(async function () {
    for (const service of services.splice(0)) await service.stop();
    for (const outbox of outboxes.splice(0)) await outbox.stop();
    await s.close();
  });

  /** A minting service on the in-process chain (or `chains`), sending through the verifier key's outbox. */
  function minting(chains?: ChainRegistry, outbox: Outbox = s.outbox) {
    const service = createIdentityMinting({
      db: s.db,
      chains: chains ?? createChains([s.chainConfig], { provider: () => hre.ethers.provider }),
      outboxes: new Map([["0g", outbox]]),
      now,
      chain: "0g",
      retryMs: RETRY_MS,
      maxRetryMs: 4 * RETRY_MS,
      confirmTimeoutMs: 10_000,
    });
    services.push(service);
    return service;
  }

  const request = (): MintRequest => ({
    agentWallet: s.worker.address,
    agentPublicKey: publicKeyFromPrivateKey(privateKeyOf(s.worker)),
    ownerWallet: s.stranger.address,
    cardUrl: `http://127.0.0.1:3000/.well-known/agents/${s.worker.address}.json`,
  });

  async function expectMintedOnce() {
    expect(await identity.lastAgentId()).to.equal(1n);
    expect(await identity.ownerOf(1n)).to.equal(s.stranger.address);
    expect(await identity.tokenURI(1n)).to.equal(request().cardUrl);
    expect(await identity.getAgentWallet(1n)).to.equal(s.worker.address);
    expect(await identity.getMetadata(1n, "metadataHash")).to.equal(identityMetadataHash(s.worker.address, request().agentPublicKey));
    expect(await identity.agentIdOfWallet(s.worker.address)).to.equal(1n);
  }

  it("mints to the owner's wallet with the card URL, the agent wallet and the metadata hash", async function () {
    const service = minting();
    const recorded = await service.requestMint(request());
    expect(recorded).to.deep.include({ agentWallet: s.worker.address, chain: "0g", state: "pending", attempts: 0, agentId: null });
    const status = await service.settled(s.worker.address);
    expect(status).to.deep.include({ state: "minted", agentId: "1", attempts: 0, lastError: null, nextAttemptAt: null });
    expect(status!.txHash).to.match(/^0x[0-9a-f]{64}$/);
    await expectMintedOnce();
    // SHA-256 of the 20 address bytes followed by the public key's bytes.
    const key = request().agentPublicKey;
    expect(status!.metadataHash).to.equal(hre.ethers.sha256(hre.ethers.concat([s.worker.address, `0x${key}`])));

    // The indexer picks the token up, and the registered agent's card shows it.
    await s.registerAgent(s.worker, [], { supportedChains: ["0g"] });
    await s.sync();
    const card = (await s.call("GET", `/.well-known/agents/${s.worker.address}.json`)).body as unknown as {
      market: { identity: { chain: string; agentId: string } | null };
    };
    expect(card.market.identity).to.deep.include({ chain: "0g", agentId: "1" });
  });

  it("never mints two tokens for one agent: repeated and concurrent requests, a restarted service, a lost answer", async function () {
    const service = minting();
    const answers = await Promise.all([service.requestMint(request()), service.requestMint(request()), service.requestMint(request())]);
    expect(answers.every((a) => a?.state === "pending" || a?.state === "minted")).to.equal(true);
    await Promise.all([service.settled(s.worker.address), service.runDue()]);
    await expectMintedOnce();

    // Another service on the same database (a restart) asked again: the record says minted, nothing is sent.
    const restarted = minting();
    expect(await restarted.requestMint(request())).to.deep.include({ state: "minted", agentId: "1" });
    expect(await restarted.runDue()).to.deep.equal([]);
    await expectMintedOnce();

    // A token minted while the record still says pending (the answer was lost): the next attempt adopts it.
    const other = { ...request(), agentWallet: s.agentVerifier.address, agentPublicKey: publicKeyFromPrivateKey(privateKeyOf(s.agentVerifier)) };
    await (
      await identity
        .connect(s.verifier)
        .registerFor(s.stranger.address, other.cardUrl, [{ metadataKey: "agentWallet", metadataValue: other.agentWallet }])
    ).wait();
    expect(await identity.lastAgentId()).to.equal(2n);
    await service.requestMint(other);
    expect(await service.settled(other.agentWallet)).to.deep.include({ state: "minted", agentId: "2" });
    expect(await identity.lastAgentId()).to.equal(2n);
  });

  it("a reverting chain leaves the mint pending with its error and a back-off; a later attempt mints it", async function () {
    const minterRole = await identity.MINTER_ROLE();
    await (await identity.connect(s.admin).revokeRole(minterRole, s.verifier.address)).wait();
    const service = minting();
    expect(await service.requestMint(request())).to.deep.include({ state: "pending" });
    const failed = await service.settled(s.worker.address);
    expect(failed).to.deep.include({ state: "pending", attempts: 1, agentId: null, nextAttemptAt: clock + RETRY_MS });
    expect(failed!.lastError).to.match(/revert/i);
    expect(await identity.lastAgentId()).to.equal(0n);

    // Not due yet: nothing is tried.
    clock += RETRY_MS - 1;
    expect(await service.runDue()).to.deep.equal([]);
    // Still refused when due: the back-off doubles.
    clock += 1;
    expect((await service.runDue())[0]).to.deep.include({ state: "pending", attempts: 2, nextAttemptAt: clock + 2 * RETRY_MS });

    await (await identity.connect(s.admin).grantRole(minterRole, s.verifier.address)).wait();
    clock += 2 * RETRY_MS;
    expect((await service.runDue())[0]).to.deep.include({ state: "minted", agentId: "1", attempts: 2, lastError: null });
    await expectMintedOnce();
  });

  it("a chain that does not answer leaves the mint pending; once it answers, a retry mints it", async function () {
    const endpoint = await rpcEndpoint();
    const config = { ...s.chainConfig, rpcUrl: endpoint.url };
    const chains = createChains([config]);
    const chain = chains.require("0g");
    const outbox = createOutbox({ db: s.db, chain, signer: new hre.ethers.Wallet(privateKeyOf(s.verifier), chain.provider), now, pollMs: 20 });
    outboxes.push(outbox);
    const service = minting(chains, outbox);
    try {
      await endpoint.down();
      expect(await service.requestMint(request())).to.deep.include({ state: "pending" });
      const failed = await service.settled(s.worker.address);
      expect(failed).to.deep.include({ state: "pending", attempts: 1 });
      expect(failed!.lastError).to.match(/request failed|ECONNREFUSED|fetch failed/i);

      await endpoint.up();
      clock += RETRY_MS;
      expect((await service.runDue())[0]).to.deep.include({ state: "minted", agentId: "1", attempts: 1 });
      await expectMintedOnce();
    } finally {
      await endpoint.down().catch(() => undefined);
      (chain.provider as ChainRpcProvider).destroy();
    }
  });

  it("never fails the caller: no identity contract, or input that cannot be recorded", async function () {
    const { identity: _none, ...withoutIdentity } = s.chainConfig;
    const service = minting(createChains([withoutIdentity], { provider: () => hre.ethers.provider }));
    expect(await service.requestMint(request())).to.deep.include({ state: "pending" });
    expect((await service.settled(s.worker.address))!.lastError).to.match(/no identity contract is configured on 0g/);

    expect(await service.requestMint({ ...request(), agentWallet: "not an address" })).to.equal(undefined);
    expect(await service.requestMint({ ...request(), agentWallet: s.poster.address, agentPublicKey: "zz" })).to.equal(undefined);
    const rows = await s.db.selectFrom("identity_mints").select("agent_wallet").execute();
    expect(rows).to.deep.equal([{ agent_wallet: s.worker.address }]);
  });
});

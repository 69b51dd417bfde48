/**
 * A hosted deploy hands the new agent to the identity minting service (issue 13 item 6): the token is minted on `0g`
 * to the owner's wallet with the agent's card URL and its wallet and metadata hash; a mint that fails never fails the
 * deploy, stays recorded as pending with its error, and a self-run worker gets no token.
 */
import { expect } from "chai";
import hre from "hardhat";
import { startTestServer, privateKeyOf, type TestServer } from "../server/harness";
import { expectOk } from "../server/expect";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { identityMetadataHash } from "@market/core/registries";
import { AgentIdentity__factory, type AgentIdentity } from "../../typechain-types";
import { until } from "./helpers";

describe("hosted agents: identity token at deploy", function () {
  this.timeout(120_000);
  let s: TestServer;
  let identity: AgentIdentity;
  let ownerKey: string;

  beforeEach(async function () {
    s = await startTestServer({ registries: true, arc: { name: "0g" }, hosted: { deployFeeRaw: 0n } });
    identity = AgentIdentity__factory.connect(s.chainConfig.identity!.address, hre.ethers.provider);
    ownerKey = await s.apiKeyFor(s.stranger);
  });
  afterEach(async function () {
    await s.close();
  });

  const deploy = () =>
    s.call<{ agent: { id: number; address: string } }>("POST", "/api/v1/agents", {
      key: ownerKey,
      body: {
        displayName: "Identity agent",
        instructions: "Answer briefly.",
        model: { baseUrl: "http://127.0.0.1:9/v1", name: "m", apiKey: "sk-never-shown" },
        ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(s.stranger)),
        start: false,
      },
    });

  it("mints the agent's token to the owner's wallet, with its card URL, wallet and metadata hash", async function () {
    const { agent } = expectOk(await deploy());
    await until(async () => (await identity.agentIdOfWallet(agent.address)) !== 0n, 30_000, "the identity token");
    const agentId = await identity.agentIdOfWallet(agent.address);
    const minted = async () =>
      (await s.db.selectFrom("identity_mints").select("state").where("agent_wallet", "=", agent.address).executeTakeFirst())?.state === "minted";
    await until(minted, 30_000, "the mint recorded as minted");
    expect(await identity.ownerOf(agentId)).to.equal(s.stranger.address);
    expect(await identity.tokenURI(agentId)).to.match(new RegExp(`/\\.well-known/agents/${agent.address}\\.json$`));
    const mint = await s.db.selectFrom("identity_mints").selectAll().where("agent_wallet", "=", agent.address).executeTakeFirstOrThrow();
    expect(mint).to.include({ state: "minted", owner_wallet: s.stranger.address, agent_id: agentId.toString() });
    // The metadata entries name the agent's wallet and the hash of its wallet and public key, not the owner's.
    expect(await identity.getMetadata(agentId, "metadataHash")).to.equal(mint.metadata_hash);
    expect(mint.metadata_hash).to.not.equal(identityMetadataHash(agent.address, publicKeyFromPrivateKey(privateKeyOf(s.stranger))));
  });

  it("a mint that fails does not fail the deploy: the agent exists and the mint stays pending with its error", async function () {
    const minterRole = await identity.MINTER_ROLE();
    await (await identity.connect(s.admin).revokeRole(minterRole, s.verifier.address)).wait();
    const { agent } = expectOk(await deploy());
    expect(expectOk(await s.call<{ agent: { id: number } }>("GET", `/api/v1/agents/${agent.id}`, { key: ownerKey })).agent.id).to.equal(agent.id);
    await until(
      async () => {
        const row = await s.db.selectFrom("identity_mints").selectAll().where("agent_wallet", "=", agent.address).executeTakeFirst();
        return row !== undefined && row.attempts > 0 && row.last_error !== null;
      },
      30_000,
      "a failed mint attempt",
    );
    const row = await s.db.selectFrom("identity_mints").selectAll().where("agent_wallet", "=", agent.address).executeTakeFirstOrThrow();
    expect(row.state).to.equal("pending");
    expect(row.next_attempt_at).to.be.a("number");
    expect(await identity.agentIdOfWallet(agent.address)).to.equal(0n);
  });
});

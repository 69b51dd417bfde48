/**
 * The gas sponsor uses a purpose (`first-evidence`, `release:<task>`) up only with a top-up that was sent and mined: a
 * top-up that could not be sent (the sponsor wallet empty, the node refusing) leaves the purpose free for the next call.
 */
import { expect } from "chai";
import hre from "hardhat";
import { Wallet } from "ethers";
import { startTestServer, type TestServer } from "../server/harness";
import { TaskEscrow__factory } from "../../typechain-types";

const escrowInterface = TaskEscrow__factory.createInterface();

describe("hosted agents: gas sponsor", function () {
  this.timeout(120_000);
  let s: TestServer;
  const sponsorKey = Wallet.createRandom().privateKey;

  beforeEach(async function () {
    s = await startTestServer({ hosted: { gasSponsor: "on", gasSponsorKey: sponsorKey } });
  });
  afterEach(async function () {
    await s.close();
  });

  it("a failed top-up does not use its purpose up: the next call sends it, and only a mined top-up counts as used", async function () {
    const ownerKey = await s.apiKeyFor(s.stranger);
    const deployed = await s.deployHostedAgent(s.stranger, ownerKey, { displayName: "Sponsored agent" });
    // The agent is the worker of a task, so its submitEvidence is a call the sponsor pays for.
    const taskHash = hre.ethers.id("sponsored: the agent's first evidence");
    await (await s.escrow.connect(s.poster).createTask(taskHash, s.token, 2_000_000n, 3_600n, hre.ethers.ZeroAddress)).wait();
    await (await s.escrow.connect(s.verifier).marketplaceAssign(taskHash, deployed.address)).wait();
    const call = {
      chain: "arc",
      from: deployed.address,
      to: s.escrowAddress,
      data: escrowInterface.encodeFunctionData("submitEvidence", [taskHash, hre.ethers.id("result")]),
    };
    const rows = async () =>
      (await s.db.selectFrom("gas_sponsorships").select(["purpose", "status"]).execute()).map((r) => `${r.purpose}:${r.status}`);

    // The sponsor wallet holds nothing: the top-up cannot be sent, and leaves nothing behind.
    expect(await s.hosting.sponsor.topUp(call)).to.deep.equal({ sponsored: false, reason: "failed" });
    expect(await rows()).to.deep.equal([]);
    expect(await hre.ethers.provider.getBalance(deployed.address)).to.equal(0n);

    // Funded, the sponsor sends it on the next call; mined, it uses the purpose up.
    const sponsor = new Wallet(sponsorKey);
    await (await s.admin.sendTransaction({ to: sponsor.address, value: 10n ** 18n })).wait();
    const sent = await s.hosting.sponsor.topUp(call);
    expect(sent.sponsored).to.equal(true);
    expect((await hre.ethers.provider.getTransactionReceipt(sent.txHash!))?.status).to.equal(1);
    expect(await hre.ethers.provider.getBalance(deployed.address)).to.be.above(0n);
    expect(await rows()).to.deep.equal(["first-evidence:sent"]);
    expect(await s.hosting.sponsor.topUp(call)).to.deep.equal({ sponsored: false, reason: "used" });
  });
});

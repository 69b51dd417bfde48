/**
 * deploy/deploy-registries.ts as an operator runs it on the `0g` network (a local node behind CHAIN_0G_RPC_URL):
 * a 1.0.0 escrow recorded by the deploy script is upgraded to 4.0.0, the identity and reputation registries are
 * deployed and wired, deployments/0g.json records all three, and a second run sends nothing.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { JsonRpcProvider } from "ethers";
import { readDeployment } from "../../deploy/deployments";
import { freePort, startLocalChain, type LocalChain } from "../../scripts/lib/local-chain";
import { AgentIdentity__factory, TaskEscrow__factory, TaskReputation__factory } from "../../typechain-types";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");
const CLI = require.resolve("hardhat/internal/cli/cli");

describe("deploy/deploy-registries.ts on 0g", function () {
  this.timeout(240_000);
  let chain: LocalChain;
  let dir: string;
  let provider: JsonRpcProvider;

  before(async function () {
    chain = await startLocalChain({ port: await freePort(), quiet: true });
    dir = mkdtempSync(path.join(tmpdir(), "market-registries-"));
    provider = new JsonRpcProvider(chain.url, undefined, { staticNetwork: true });
  });

  after(function () {
    provider?.destroy();
    chain?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const script = (file: string, extra: NodeJS.ProcessEnv = {}) =>
    run(process.execPath, [CLI, "run", "--no-compile", "--network", "0g", file], {
      env: { ...process.env, CHAIN_0G_RPC_URL: chain.url, DEPLOYMENTS_DIR: dir, HARDHAT_NETWORK: "", ...extra },
      cwd: ROOT,
    });

  it("upgrades a recorded 1.0.0 escrow, deploys and wires both registries, records them, and sends nothing again", async function () {
    await script("deploy/deploy.ts", { ESCROW_CONTRACT: "TaskEscrowV1" });
    const v1 = readDeployment("0g", dir);
    expect(v1).to.deep.include({ network: "0g", version: "1.0.0" });

    const minter = "0x976EA74026E726554dB657fA54763abd0C3a0aa9"; // account 6 of the node
    const first = await script("deploy/deploy-registries.ts", { IDENTITY_MINTER: minter });
    expect(first.stdout).to.contain(`escrow ${v1!.proxy} upgraded from 1.0.0 to 4.0.0`);
    const record = readDeployment("0g", dir)!;
    expect(record).to.deep.include({ proxy: v1!.proxy, version: "4.0.0", contract: "TaskEscrow" });
    expect(record.identity).to.deep.include({ contract: "AgentIdentity", version: "1.0.0", admin: v1!.admin, minters: [minter] });
    expect(record.reputation).to.deep.include({
      contract: "TaskReputation",
      version: "1.0.0",
      admin: v1!.admin,
      writers: [v1!.proxy],
    });
    expect(record.identity!.block).to.be.greaterThan(record.block);

    const escrow = TaskEscrow__factory.connect(record.proxy, provider);
    const reputation = TaskReputation__factory.connect(record.reputation!.proxy, provider);
    const identity = AgentIdentity__factory.connect(record.identity!.proxy, provider);
    expect(await escrow.version()).to.equal("4.0.0");
    expect(await escrow.reputationRegistry()).to.equal(record.reputation!.proxy);
    expect(await reputation.isWriter(record.proxy)).to.equal(true);
    expect(await identity.hasRole(await identity.MINTER_ROLE(), minter)).to.equal(true);
    expect(await identity.hasRole(await identity.DEFAULT_ADMIN_ROLE(), record.admin)).to.equal(true);
    expect(await reputation.hasRole(await reputation.DEFAULT_ADMIN_ROLE(), record.admin)).to.equal(true);

    const blockBefore = await provider.getBlockNumber();
    const second = await script("deploy/deploy-registries.ts", { IDENTITY_MINTER: minter });
    expect(second.stdout).to.contain("already in place on 0g; nothing sent");
    expect(await provider.getBlockNumber()).to.equal(blockBefore);
    expect(readDeployment("0g", dir)).to.deep.equal(record);
  });
});

/**
 * A paused escrow, seen by a poster: the settlement health says new tasks are not postable and why, and posting through
 * the SDK or the CLI is refused with the escrow's own error decoded (`EscrowPaused()`, code ESCROW_PAUSED), never a
 * raw ethers dump, with nothing paid.
 */
import { expect } from "chai";
import { startStack, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";
import { MarketClient } from "../../sdk/src/client";
import { ApiError } from "../../sdk/src/errors";
import { expectOk } from "../server/expect";
import type { SettlementAnswer } from "@market/core/api";
import { escrowInterface } from "../../sdk/src/chain";
import hre from "hardhat";
import { ZeroAddress, id } from "ethers";

const unlisted = id("a task funded straight on the escrow");

describe("cli: a paused escrow", function () {
  let s: Stack;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    ensureCliBuilt();
    s = await startStack();
    await s.registerAgent(s.worker, ["summarization"]);
    env = await cliEnv(s, s.poster);
    // Funded straight on the escrow, never listed: `cancelAndRefund` sends its cancel without asking the API.
    await (await s.escrow.connect(s.poster).createTask(unlisted, await s.usdc.getAddress(), 1_000_000n, 86_400, ZeroAddress)).wait();
    await (await s.escrow.connect(s.admin).pause()).wait();
    await s.sync();
  });
  after(async function () {
    if (await s.escrow.paused()) await (await s.escrow.connect(s.admin).unpause()).wait();
    await s.close();
  });

  it("reports postable: false with the reason in the settlement health", async function () {
    const answer = expectOk(await s.call<SettlementAnswer>("GET", "/api/v1/health/settlement"));
    const arc = answer.chains.find((c) => c.chain === "arc")!;
    expect(arc.postable).to.equal(false);
    expect(arc.notPostableReason).to.equal("ESCROW_PAUSED");
  });

  it("refuses an SDK post with ESCROW_PAUSED and the decoded custom error, paying nothing", async function () {
    const before = await s.usdc.balanceOf(s.poster.address);
    const nonce = await hre.ethers.provider.getTransactionCount(s.poster.address);
    const client = new MarketClient(await s.clientOptions(s.poster));
    const error = await client
      .postTask({ instructions: "Name three prime numbers.", amountRaw: 1_000_000n, privacy: "public" })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).code).to.equal("ESCROW_PAUSED");
    expect((error as ApiError).message).to.contain("EscrowPaused()");
    expect(await hre.ethers.provider.getTransactionCount(s.poster.address)).to.equal(nonce);
    expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before);
  });

  it("refuses a CLI post with the escrow's error by name", async function () {
    const before = await s.usdc.balanceOf(s.poster.address);
    const dir = taskDir({ "t.csv": "instructions,reward,privacy\nName three prime numbers.,1,public\n" });
    const run = await runCli(["post-tasks", "--file", "t.csv", "--yes"], { env, cwd: dir });
    expect(run.status).to.not.equal(0);
    const output = run.stdout + run.stderr;
    expect(output).to.contain("ESCROW_PAUSED").and.contain("EscrowPaused()");
    expect(output).to.not.contain("unknown custom error").and.not.contain('"code"');
    expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before);
  });

  it("decodes the escrow's refusal of a call sent straight to it (an unlisted task's refund) by name", async function () {
    const client = new MarketClient(await s.clientOptions(s.poster));
    const error = await client.cancelAndRefund(unlisted).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).code).to.equal("ESCROW_PAUSED");
    expect((error as ApiError).message).to.equal("The escrow refused the transaction: EscrowPaused(); nothing was sent.");
    expect((error as ApiError).body.revert).to.deep.equal({ name: "EscrowPaused", args: [] });
  });

  it("decodes a refusal's arguments (once unpaused: a task hash the escrow already holds)", async function () {
    await (await s.escrow.connect(s.admin).unpause()).wait();
    const wallet = await new MarketClient(await s.clientOptions(s.poster)).wallet();
    const data = escrowInterface.encodeFunctionData("createTask", [unlisted, await s.usdc.getAddress(), 1_000_000n, 86_400, ZeroAddress]);
    const error = await wallet.send(null, { to: wallet.escrow, data }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).code).to.equal("TX_REVERTED");
    expect((error as ApiError).message).to.equal(`The escrow refused the transaction: TaskHashUsed(${unlisted}); nothing was sent.`);
    expect((error as ApiError).body).to.include({ reason: "TaskHashUsed" });
  });
});

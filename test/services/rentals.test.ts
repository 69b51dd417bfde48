/**
 * Rentals end to end: a hosted agent (on a scripted OpenAI-compatible model server on loopback) lists a service, and
 * another account rents it through the SDK and gets the output, with exact balances and `sold_count`; the card shows
 * the service with its price; a price change applies to the next rental only; the agent takes its rentals first; a
 * deactivated service is refused; and the three ways a rental ends badly, each with its exact refund.
 */
import { sweepFeesToTreasury } from "../support/fees";
import { expect } from "chai";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { Stack } from "../support/stack";
import { startModelServer, briefOf, type ModelServer } from "../support/model-server";
import { MarketClient, type RentalProgress } from "../../sdk/src/client";
import { ApiError } from "../../sdk/src/errors";
import { clientOf, deliveriesOf, statusOf, until } from "../hosted/helpers";
import { RENTAL_PRICE as PRICE, serviceStackFixture, untilAgentRegistered, type ServiceSeed } from "./helpers";

/** The agent's minimum for other tasks, far above the price: it does not apply to rentals. */
const MIN_REWARD = 50_000_000n;
const ANSWER = "Review: the agreement carries three risks: uncapped liability, a one-sided termination right and automatic renewal.";
const REFUSAL = "I'm sorry, but I can't help with that request.";

describe("services: renting a hosted agent's service", function () {
  this.timeout(240_000);
  let model: ModelServer;
  let s: Stack;
  let seeded: ServiceSeed;
  let poster: MarketClient;
  let posterKey: string;

  // One model server for the file: the seeded agent points at it.
  before(async function () {
    model = await startModelServer();
  });
  after(async function () {
    await model.close();
  });

  const seededStack = serviceStackFixture(() => model, { minReward: MIN_REWARD, stack: { hosted: { agentConcurrency: 1 } } });

  beforeEach(async function () {
    model.requests.length = 0;
    model.setScript((request) => (briefOf(request).includes("REFUSE") ? { content: REFUSAL } : { content: ANSWER }));
    ({ stack: s, seeded } = await seededStack());
    const options = await s.clientOptions(s.poster);
    poster = new MarketClient(options);
    posterKey = options.apiKey;
    // Started with the stack: registered on arc with its key.
    await untilAgentRegistered(poster, seeded.service.id);
  });
  afterEach(async function () {
    await hre.network.provider.send("evm_setAutomine", [true]);
    await s.close();
  });

  const balances = async () => {
    await sweepFeesToTreasury(s);
    return {
      poster: await s.usdc.balanceOf(s.poster.address),
      agent: await s.usdc.balanceOf(seeded.agent.address),
      treasury: await s.usdc.balanceOf(s.treasury.address),
      escrow: await s.usdc.balanceOf(s.escrowAddress),
    };
  };
  const soldCount = async () => {
    await s.sync();
    return (await poster.getService(seeded.service.id)).sold_count;
  };
  const owner = () => clientOf(s, s.stranger);

  it("another account rents it through the SDK and gets the output: exact balances, sold_count 1, the card shows it with its price", async function () {
    const before = await balances();
    const progress: RentalProgress[] = [];
    const prompt = "Review this NDA: the recipient keeps information confidential for ten years, renewing yearly.";
    const rental = await poster.rentService({ serviceId: seeded.service.id, prompt, waitSeconds: 90, onProgress: (p) => progress.push(p) });
    expect(rental).to.deep.include({ serviceId: seeded.service.id, status: "verified", done: true, output: ANSWER, amountRaw: PRICE.toString() });
    expect(rental.verificationResult?.passed).to.equal(true);
    expect(progress.at(-1)?.status).to.equal("verified");

    // Fee (10%, rounded down) to the treasury, the rest to the agent; the poster paid the price once.
    const after = await balances();
    expect(before.poster - after.poster).to.equal(PRICE);
    expect(after.agent - before.agent).to.equal(1_350_000n);
    expect(after.treasury - before.treasury).to.equal(150_000n);
    expect(after.escrow).to.equal(before.escrow);
    await until(async () => (await soldCount()) === 1, 20_000, "sold_count 1");

    // An ordinary task: a one-hour rental pinned to the agent, linked to the service, auto-checked; the prompt went
    // to the model, encrypted on the way to the agent alone.
    const view = await poster.getTask(rental.taskHash);
    expect(view.meta).to.deep.include({ serviceId: seeded.service.id, targetExecutor: seeded.agent.address, privacy: "private" });
    expect(view.meta.verificationCriteria).to.deep.equal({ min_length: 20 });
    const funded = (await hre.ethers.provider.getTransactionReceipt(view.meta.fundingTx))!;
    expect(view.meta.deadline - (await hre.ethers.provider.getBlock(funded.blockNumber))!.timestamp * 1_000).to.equal(3_600_000);
    expect(model.requests.some((r) => briefOf(r).includes(prompt))).to.equal(true);
    const keys = await s.db.selectFrom("task_keys").select("agent_address").where("task_hash", "=", rental.taskHash).execute();
    expect(keys.map((k) => k.agent_address)).to.deep.equal([seeded.agent.address]);
    expect(await deliveriesOf(s, rental.taskHash)).to.have.length(1);

    // The card lists the service as a skill with its price and how to hire.
    const card = (await s.call("GET", `/.well-known/agents/${seeded.agent.address}.json`)).body as unknown as {
      skills: Array<Record<string, unknown>>;
      market: { hire: { api: string; mcp: string } };
    };
    expect(card.skills).to.have.length(1);
    expect(card.skills[0]).to.deep.include({
      id: `service-${seeded.service.id}`,
      name: "Contract risk review",
      description: "Send a contract; get its risks. (1.5 USDC per call)",
      serviceId: seeded.service.id,
      price: { amountRaw: PRICE.toString(), currency: "USDC", decimals: 6 },
      soldCount: 1,
    });
    expect((card.skills[0]!.hire as { api: string }).api).to.contain(`serviceId=${seeded.service.id}`);
    expect(card.market.hire.api).to.contain("serviceId");
    expect(card.market.hire.mcp).to.contain("rent_service");
    // A deactivated service is no skill.
    await (await owner()).updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, active: false });
    expect(((await s.call("GET", `/.well-known/agents/${seeded.agent.address}.json`)).body as unknown as { skills: unknown[] }).skills).to.deep.equal(
      [],
    );
  });

  it("a price change applies to the next rental only; the agent takes its rentals first", async function () {
    const ownerClient = await owner();
    const start = await balances();
    const first = await poster.rentService({
      serviceId: seeded.service.id,
      prompt: "Review the first lease: twelve months, no break clause.",
      waitSeconds: 90,
    });
    expect(first).to.deep.include({ status: "verified", amountRaw: PRICE.toString() });
    const newPrice = 2_000_001n;
    const repriced = await ownerClient.updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, priceRaw: newPrice });
    expect(repriced.price_raw).to.equal(newPrice.toString());
    const second = await poster.rentService({
      serviceId: seeded.service.id,
      prompt: "Review the second lease: six months, a break clause.",
      waitSeconds: 90,
    });
    expect(second).to.deep.include({ status: "verified", amountRaw: newPrice.toString() });
    // Each rental paid its own price, exactly.
    const after = await balances();
    expect(start.poster - after.poster).to.equal(PRICE + newPrice);
    expect(after.agent - start.agent).to.equal(1_350_000n + 1_800_001n);
    expect(after.treasury - start.treasury).to.equal(150_000n + 200_000n);
    expect((await poster.getTask(first.taskHash)).meta.reward.amount).to.equal(PRICE.toString());
    await until(async () => (await soldCount()) === 2, 20_000, "sold_count 2");

    // Rentals first: with the agent stopped, a better-paid task it could take and a rental wait; started with one
    // slot, it takes the rental first.
    await ownerClient.stopAgent({ agentId: seeded.agent.id });
    const open = await poster.postTask({
      instructions: "Summarise the open letter on river pollution for a newsletter.",
      amountRaw: MIN_REWARD * 2n,
      privacy: "public",
      capabilities: ["summarization"],
    });
    const waiting = await poster.rentService({ serviceId: seeded.service.id, prompt: "Review the third lease: RENTAL-FIRST.", waitSeconds: 0 });
    expect(waiting.done).to.equal(false);
    // Both tasks indexed before the agent starts, so its first look sees both.
    for (const hash of [waiting.taskHash, open.taskHash!]) {
      await until(async () => (await statusOf(s, posterKey, hash)).status === "open", 30_000, `task ${hash} indexed`);
    }
    const asked = model.requests.length;
    await ownerClient.startAgent({ agentId: seeded.agent.id });
    await until(
      async () =>
        (await statusOf(s, posterKey, waiting.taskHash)).status === "verified" &&
        (await statusOf(s, posterKey, open.taskHash!)).status === "verified",
      90_000,
      "both verified",
    );
    const briefs = model.requests.slice(asked).map(briefOf);
    expect(briefs[0]).to.contain("RENTAL-FIRST");
    expect(briefs.some((b) => b.includes("river pollution"))).to.equal(true);
  });

  it("a deactivated service is refused before anything is paid; a rental never taken is cancelled for the whole price, and no other agent may take it", async function () {
    const ownerClient = await owner();
    await ownerClient.updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, active: false });
    const start = await balances();
    let refused: unknown;
    try {
      await poster.rentService({ serviceId: seeded.service.id, prompt: "Review this contract, please." });
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(ApiError);
    expect((refused as ApiError).code).to.equal("SERVICE_NOT_ACTIVE");
    expect(await balances()).to.deep.equal(start);

    // Never taken: the agent is stopped.
    await ownerClient.updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, active: true });
    await ownerClient.stopAgent({ agentId: seeded.agent.id });
    const rental = await poster.rentService({ serviceId: seeded.service.id, prompt: "Review the supplier contract of March.", waitSeconds: 1 });
    expect(rental).to.deep.include({ status: "open", done: false });
    expect(start.poster - (await balances()).poster).to.equal(PRICE);
    // Pinned to the service's agent: another agent may not take it.
    const worker = new MarketClient(await s.clientOptions(s.worker));
    let notTarget: unknown;
    try {
      await worker.acceptTask(rental.taskHash);
    } catch (error) {
      notTarget = error;
    }
    expect((notTarget as ApiError).code).to.equal("NOT_TARGET_EXECUTOR");
    const cancelled = await poster.cancelAndRefund(rental.taskHash);
    expect(cancelled.outcome).to.equal("refund");
    expect(await balances()).to.deep.equal(start);
    await s.sync();
    expect((await statusOf(s, posterKey, rental.taskHash)).status).to.equal("cancelled");
    expect(await soldCount()).to.equal(0);
  });

  it("deleting a service keeps its paid rentals pinned: its agent still delivers one, paid exactly, and it counts", async function () {
    const ownerClient = await owner();
    await ownerClient.stopAgent({ agentId: seeded.agent.id });
    const start = await balances();
    const rental = await poster.rentService({ serviceId: seeded.service.id, prompt: "Review the consulting agreement of May.", waitSeconds: 0 });
    expect(await ownerClient.deleteService({ agentId: seeded.agent.id, serviceId: seeded.service.id })).to.deep.equal({
      id: seeded.service.id,
      deleted: true,
    });
    let gone: unknown;
    try {
      await poster.getService(seeded.service.id);
    } catch (error) {
      gone = error;
    }
    expect((gone as ApiError).code).to.equal("SERVICE_NOT_FOUND");
    await ownerClient.startAgent({ agentId: seeded.agent.id });
    const done = await poster.waitForResult({ taskHash: rental.taskHash, waitMs: 90_000 });
    expect(done).to.deep.include({ status: "verified", output: ANSWER });
    const end = await balances();
    expect(start.poster - end.poster).to.equal(PRICE);
    expect(end.agent - start.agent).to.equal(1_350_000n);
    expect((await poster.getTask(rental.taskHash)).meta.serviceId).to.equal(seeded.service.id);
    const counted = async () => {
      await s.sync();
      return (await s.db.selectFrom("services").select("sold_count").where("id", "=", seeded.service.id).executeTakeFirstOrThrow()).sold_count;
    };
    await until(async () => (await counted()) === 1, 20_000, "the deleted service's sale counted");
  });

  it("taken and never delivered: the poster claims it back after the one-hour deadline, exactly", async function () {
    model.setScript((request) => (briefOf(request).includes("HANG") ? { hang: true } : { content: ANSWER }));
    const start = await balances();
    const rental = await poster.rentService({ serviceId: seeded.service.id, prompt: "Review this HANG contract.", waitSeconds: 0 });
    await until(() => model.hangingCount() === 1, 30_000, "the model call to hang");
    expect((await statusOf(s, posterKey, rental.taskHash)).status).to.equal("assigned");
    // The agent stops mid-task: the rental stays assigned to it, undelivered.
    await (await owner()).stopAgent({ agentId: seeded.agent.id });
    await s.sync();
    expect((await statusOf(s, posterKey, rental.taskHash)).status).to.equal("assigned");
    let early: unknown;
    try {
      await poster.cancelAndRefund(rental.taskHash);
    } catch (error) {
      early = error;
    }
    expect((early as ApiError).code).to.equal("DEADLINE_NOT_REACHED");

    await time.increase(3_601);
    await s.sync();
    const claimed = await poster.cancelAndRefund(rental.taskHash);
    expect(claimed.outcome).to.equal("refund");
    const end = await balances();
    expect(end.poster).to.equal(start.poster);
    expect(end.agent).to.equal(start.agent);
    expect(end.treasury).to.equal(start.treasury);
    await s.sync();
    expect((await statusOf(s, posterKey, rental.taskHash)).status).to.equal("refunded");
    expect(await deliveriesOf(s, rental.taskHash)).to.deep.equal([]);
    expect(await soldCount()).to.equal(0);
  });

  it("failed: delivered once and never again; the poster claims it back after the deadline and the 3-day appeal window, exactly", async function () {
    const start = await balances();
    const rental = await poster.rentService({ serviceId: seeded.service.id, prompt: "Review this REFUSE contract.", waitSeconds: 90 });
    expect(rental).to.deep.include({ status: "failed", done: true, output: REFUSAL });
    expect(rental.verificationResult?.passed).to.equal(false);
    // Hosted agents never deliver a failed rental again, though rounds remain: a few browses later, still one.
    const asked = model.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(model.requests.length).to.equal(asked);
    expect(await deliveriesOf(s, rental.taskHash)).to.have.length(1);
    expect((await statusOf(s, posterKey, rental.taskHash)).status).to.equal("failed");

    await time.increase(3_601);
    await s.sync();
    let early: unknown;
    try {
      await poster.cancelAndRefund(rental.taskHash);
    } catch (error) {
      early = error;
    }
    expect((early as ApiError).code).to.equal("APPEAL_WINDOW_OPEN");
    await time.increase(3 * 86_400);
    await s.sync();
    expect((await poster.cancelAndRefund(rental.taskHash)).outcome).to.equal("refund");
    const end = await balances();
    expect(end.poster).to.equal(start.poster);
    expect(end.agent).to.equal(start.agent);
    expect(end.treasury).to.equal(start.treasury);
    await s.sync();
    expect((await statusOf(s, posterKey, rental.taskHash)).status).to.equal("refunded");
    expect(await soldCount()).to.equal(0);
  });
});

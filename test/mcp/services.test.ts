/**
 * The service tools over MCP with the official SDK client, against a hosted agent on the scripted model server:
 * browse_services and get_service; rent_service over stdio (`market mcp`) from quote to confirm to the output, with
 * exact balances and an idempotent repeat; every quote refusal of rent_service; resume after `market mcp` is killed
 * between funding and listing (paid once); the remote /mcp endpoint, which quotes a rental and answers the confirm
 * USE_LOCAL_MCP, and rents from a hosted agent's custodied wallet for its owner (X-Market-Agent).
 */
import { sweepFeesToTreasury } from "../support/fees";
import { expect } from "chai";
import hre from "hardhat";
import type { Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, readJournalEntries, taskDir, until } from "../support/cli";
import { startModelServer, briefOf, type ModelServer } from "../support/model-server";
import { httpMcp, journalsUnder, stdioMcp, type Mcp } from "./helpers";
import { MarketClient, type ServiceView } from "../../sdk/src/client";
import { clientOf, fundGas } from "../hosted/helpers";
import { RENTAL_PRICE, serviceStackFixture, untilAgentRegistered, type ServiceSeed } from "../services/helpers";

const ANSWER = "Review: the supply contract has three risks: no price cap, a long notice period and exclusive sourcing.";
const QUOTE_FIELDS = [
  "alreadyPosted",
  "currency",
  "escrow",
  "payFrom",
  "privacy",
  "quoteId",
  "settlement",
  "tasks",
  "toPost",
  "transactions",
  "walletBalance",
].sort();

describe("mcp: services (browse_services, get_service, rent_service)", function () {
  this.timeout(240_000);
  let model: ModelServer;
  let s: Stack;
  let seeded: ServiceSeed;
  let env: NodeJS.ProcessEnv;
  let stateDir: string;
  let mcp: (Mcp & { stderr(): string }) | undefined;

  before(async function () {
    ensureCliBuilt();
    model = await startModelServer();
    model.setScript(() => ({ content: ANSWER }));
  });
  after(async function () {
    await model.close();
  });
  const seededStack = serviceStackFixture(() => model);

  beforeEach(async function () {
    ({ stack: s, seeded } = await seededStack());
    stateDir = taskDir({});
    env = await cliEnv(s, s.poster, { extra: { MARKET_MCP_STATE_DIR: stateDir } });
    await untilAgentRegistered(new MarketClient(await s.clientOptions(s.poster)), seeded.service.id);
  });
  afterEach(async function () {
    await mcp?.close();
    mcp = undefined;
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
  const open = async () => (mcp = await stdioMcp(env));

  it("browses and gets services; rents one from quote to output with exact balances; the same call again pays nothing", async function () {
    const m = await open();
    const browsed = await m.call("browse_services", {});
    expect(browsed.isError, browsed.text).to.equal(false);
    expect((browsed.data.services as ServiceView[]).map((x) => x.id)).to.deep.equal([seeded.service.id]);
    expect(browsed.text).to.contain(`#${seeded.service.id} Contract risk review: 1.5 USDC per call`);
    const mine = await m.call("browse_services", { agent: seeded.agent.address });
    expect(mine.data.total).to.equal(1);
    const got = await m.call("get_service", { serviceId: seeded.service.id });
    expect((got.data.service as ServiceView).price_raw).to.equal(RENTAL_PRICE.toString());
    expect((await m.call("get_service", { serviceId: 987_654 })).code).to.equal("SERVICE_NOT_FOUND");

    const start = await balances();
    const args = { serviceId: seeded.service.id, prompt: "Review this supply contract: no price cap, exclusive sourcing.", idempotencyKey: "rent-1" };
    const quote = await m.call("rent_service", args);
    expect(quote.isError, quote.text).to.equal(false);
    expect(Object.keys(quote.data).sort()).to.deep.equal(QUOTE_FIELDS);
    expect(quote.data).to.deep.include({
      tasks: 1,
      alreadyPosted: 0,
      toPost: 1,
      escrow: RENTAL_PRICE.toString(),
      currency: "USDC",
      settlement: "arc",
      payFrom: s.poster.address,
      walletBalance: start.poster.toString(),
      privacy: { public: 0, private: 1 },
    });
    expect(quote.text).to.contain("call rent_service again with the same arguments plus confirm: true");
    expect(await balances()).to.deep.equal(start, "a quote spends nothing");

    const rented = await m.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(rented.isError, rented.text).to.equal(false);
    expect(rented.data).to.deep.include({
      serviceId: seeded.service.id,
      status: "verified",
      done: true,
      output: ANSWER,
      amount: RENTAL_PRICE.toString(),
      alreadyPosted: false,
      escrowPaid: RENTAL_PRICE.toString(),
    });
    expect(rented.text).to.contain(ANSWER);
    const taskHash = rented.data.taskHash as string;
    const end = await balances();
    expect(start.poster - end.poster).to.equal(RENTAL_PRICE);
    expect(end.agent - start.agent).to.equal(1_350_000n);
    expect(end.treasury - start.treasury).to.equal(150_000n);
    expect(model.requests.some((r) => briefOf(r).includes("no price cap, exclusive sourcing"))).to.equal(true);
    const polled = await m.call("poll_task_result", { taskHash });
    expect(polled.data).to.deep.include({ status: "verified", output: ANSWER });

    // The same call again: posted already, nothing to pay; its confirm answers the same rental.
    const again = await m.call("rent_service", args);
    expect(again.data).to.deep.include({ tasks: 1, alreadyPosted: 1, toPost: 0, escrow: "0", transactions: 0 });
    const repeated = await m.call("rent_service", { ...args, confirm: true, quoteId: again.data.quoteId });
    expect(repeated.data).to.deep.include({ taskHash, alreadyPosted: true, escrowPaid: "0", status: "verified", output: ANSWER });
    expect(await balances()).to.deep.equal(end);
    // A rental posted already is reported whatever its service does since.
    await (await clientOf(s, s.stranger)).updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, active: false });
    expect((await m.call("rent_service", args)).data).to.deep.include({ alreadyPosted: 1, toPost: 0 });
    // Another prompt under a used key is refused.
    const other = await m.call("rent_service", { ...args, prompt: "Review a different contract." });
    expect(other.code, other.text).to.equal("IDEMPOTENCY_KEY_REUSED");
  });

  it("refuses a confirm without a quote, a reused or expired quote, changed arguments, a changed price or a balance that no longer covers it; too long a wait; a deactivated service", async function () {
    const m = await open();
    const start = await balances();
    const args = { serviceId: seeded.service.id, prompt: "Review the distribution agreement of June.", idempotencyKey: "refusals" };

    expect((await m.call("rent_service", { ...args, confirm: true })).code).to.equal("QUOTE_REQUIRED");
    const quote = await m.call("rent_service", args);
    const changed = await m.call("rent_service", { ...args, prompt: "Review another agreement.", confirm: true, quoteId: quote.data.quoteId });
    expect(changed.code, changed.text).to.equal("QUOTE_MISMATCH");
    const privacy = await m.call("rent_service", { ...args, privacy: "public", confirm: true, quoteId: quote.data.quoteId });
    expect(privacy.code, privacy.text).to.equal("QUOTE_MISMATCH");

    // The price changes after the quote: the confirm is refused, nothing spent.
    const owner = await clientOf(s, s.stranger);
    await owner.updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, priceRaw: RENTAL_PRICE + 1n });
    const repriced = await m.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(repriced.code, repriced.text).to.equal("QUOTE_MISMATCH");
    await owner.updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, priceRaw: RENTAL_PRICE });

    // The wallet no longer covers the price: a balance-relevant fact changed.
    const balance = await s.usdc.balanceOf(s.poster.address);
    await (await s.usdc.connect(s.poster).transfer(s.admin.address, balance - RENTAL_PRICE + 1n)).wait();
    const poorer = await m.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(poorer.code, poorer.text).to.equal("QUOTE_MISMATCH");
    await (await s.usdc.connect(s.admin).transfer(s.poster.address, balance - RENTAL_PRICE + 1n)).wait();

    // Ten minutes later the quote is gone.
    s.advanceClock(10 * 60_000 + 1_000);
    const expired = await m.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(expired.code, expired.text).to.equal("QUOTE_REQUIRED");
    expect(expired.text).to.contain("expired");

    expect((await m.call("rent_service", { ...args, waitSeconds: 61 })).code).to.equal("VALIDATION_FAILED");
    expect((await m.call("rent_service", { ...args, serviceId: 0 })).code).to.equal("VALIDATION_FAILED");
    expect(await balances()).to.deep.equal(start);

    // Used once, never again.
    const fresh = await m.call("rent_service", { ...args, waitSeconds: 0 });
    const used = await m.call("rent_service", { ...args, waitSeconds: 0, confirm: true, quoteId: fresh.data.quoteId });
    expect(used.isError, used.text).to.equal(false);
    expect(used.data.done).to.equal(false);
    expect(used.text).to.contain("poll it with poll_task_result");
    const reused = await m.call("rent_service", { ...args, waitSeconds: 0, confirm: true, quoteId: fresh.data.quoteId });
    expect(reused.code, reused.text).to.equal("QUOTE_REQUIRED");
    const spent = await balances();
    expect(start.poster - spent.poster).to.equal(RENTAL_PRICE);

    // A deactivated service gets no quote.
    await owner.updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, active: false });
    const inactive = await m.call("rent_service", { ...args, idempotencyKey: "inactive" });
    expect(inactive.code, inactive.text).to.equal("SERVICE_NOT_ACTIVE");
    expect(await balances()).to.deep.equal(spent);
  });

  it("killed between funding and listing, the same rent_service call lists the rental without paying again", async function () {
    const start = await balances();
    const args = { serviceId: seeded.service.id, prompt: "Review the warehouse lease: five years, fixed rent.", idempotencyKey: "resume" };
    const paused = await stdioMcp(env, { pauseAfter: { step: "funded", ms: 60_000 } });
    const quote = await paused.call("rent_service", args);
    const confirming = paused.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
    confirming.catch(() => undefined);
    await until(() => journalsUnder(stateDir).some((j) => readJournalEntries(j).some((e) => e.t === "funded")), "the funding", 60_000);
    const pid = paused.transport.pid;
    if (pid === null) throw new Error("market mcp is not running");
    process.kill(pid, "SIGKILL");
    await paused.close().catch(() => undefined);
    expect((await balances()).escrow - start.escrow).to.equal(RENTAL_PRICE, "paid, not listed");

    const m = await open();
    const requote = await m.call("rent_service", args);
    expect(requote.data).to.deep.include({ tasks: 1, alreadyPosted: 0, toPost: 0, escrow: "0", transactions: 0 });
    expect(requote.text).to.contain("1 paid earlier and only to be listed");
    const finished = await m.call("rent_service", { ...args, confirm: true, quoteId: requote.data.quoteId });
    expect(finished.isError, finished.text).to.equal(false);
    expect(finished.data).to.deep.include({ status: "verified", output: ANSWER, escrowPaid: "0" });
    const end = await balances();
    expect(start.poster - end.poster).to.equal(RENTAL_PRICE, "paid once");
    expect(end.agent - start.agent).to.equal(1_350_000n);
  });

  it("the remote /mcp endpoint browses and quotes a rental, answers its confirm USE_LOCAL_MCP, and market mcp confirms that quote", async function () {
    const posterKey = env.MARKET_API_KEY!;
    const remote = await httpMcp(s.apiUrl, posterKey);
    const start = await balances();
    const args = { serviceId: seeded.service.id, prompt: "Review the remote services agreement.", idempotencyKey: "remote" };
    try {
      expect(((await remote.call("browse_services", {})).data.services as ServiceView[]).map((x) => x.id)).to.deep.equal([seeded.service.id]);
      expect(((await remote.call("get_service", { serviceId: seeded.service.id })).data.service as ServiceView).name).to.equal(
        "Contract risk review",
      );
      const quote = await remote.call("rent_service", args);
      expect(quote.isError, quote.text).to.equal(false);
      expect(Object.keys(quote.data).sort()).to.deep.equal(QUOTE_FIELDS);
      expect(quote.data).to.deep.include({ toPost: 1, escrow: RENTAL_PRICE.toString(), payFrom: s.poster.address });
      const refused = await remote.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
      expect(refused.code, refused.text).to.equal("USE_LOCAL_MCP");
      expect(await balances()).to.deep.equal(start);

      // Quotes live on the service: the local server confirms the remote quote.
      const m = await open();
      const rented = await m.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
      expect(rented.isError, rented.text).to.equal(false);
      expect(rented.data).to.deep.include({ status: "verified", output: ANSWER });
      expect(start.poster - (await balances()).poster).to.equal(RENTAL_PRICE);
      const polled = await remote.call("poll_task_result", { taskHash: rented.data.taskHash });
      expect(polled.data).to.deep.include({ status: "verified", output: ANSWER });
    } finally {
      await remote.close();
    }
    await hre.network.provider.send("evm_setAutomine", [true]);
  });

  it("the remote /mcp endpoint rents a service for a hosted agent's owner, paid from the agent's custodied wallet (X-Market-Agent)", async function () {
    // The poster's own hosted agent (stopped), funded, rents the stranger's agent's service.
    const renterKey = await s.apiKeyFor(s.poster);
    const renter = await s.deployHostedAgent(s.poster, renterKey);
    await fundGas(s.poster, renter.address);
    await (await s.usdc.connect(s.admin).mint(renter.address, 2_000_000n)).wait();
    const start = { ...(await balances()), renter: await s.usdc.balanceOf(renter.address) };
    const remote = await httpMcp(s.apiUrl, renterKey, { "x-market-agent": String(renter.id) });
    try {
      const args = { serviceId: seeded.service.id, prompt: "Review this lease: automatic renewal, no exit clause.", idempotencyKey: "agent-rent" };
      const quote = await remote.call("rent_service", args);
      expect(quote.isError, quote.text).to.equal(false);
      expect(quote.data).to.deep.include({ toPost: 1, escrow: RENTAL_PRICE.toString(), payFrom: renter.address, walletBalance: "2000000" });
      const rented = await remote.call("rent_service", { ...args, confirm: true, quoteId: quote.data.quoteId });
      expect(rented.isError, rented.text).to.equal(false);
      expect(rented.data).to.deep.include({ status: "verified", done: true, output: ANSWER, escrowPaid: RENTAL_PRICE.toString() });
      const end = { ...(await balances()), renter: await s.usdc.balanceOf(renter.address) };
      expect(start.renter - end.renter).to.equal(RENTAL_PRICE);
      expect(end.agent - start.agent).to.equal(1_350_000n);
      expect(end.treasury - start.treasury).to.equal(150_000n);
      expect(end.poster).to.equal(start.poster);
      // The prompt reached the seller's model, encrypted to its agent on the way.
      expect(model.requests.some((r) => briefOf(r).includes("automatic renewal, no exit clause"))).to.equal(true);
    } finally {
      await remote.close();
    }
  });

  it("a hosted agent renting its own service is refused at the quote (TARGET_IS_POSTER), not only at the confirm", async function () {
    expect((await s.call("POST", `/api/v1/agents/${seeded.agent.id}/stop`, { key: seeded.ownerKey })).status).to.equal(200);
    const start = await s.usdc.balanceOf(seeded.agent.address);
    const remote = await httpMcp(s.apiUrl, seeded.ownerKey, { "x-market-agent": String(seeded.agent.id) });
    try {
      const quote = await remote.call("rent_service", {
        serviceId: seeded.service.id,
        prompt: "Review my own lease, please, in detail.",
        idempotencyKey: "self-rent",
      });
      expect(quote.isError, quote.text).to.equal(true);
      expect(quote.code, quote.text).to.equal("TARGET_IS_POSTER");
      expect(quote.text).to.contain("an agent cannot rent itself; nothing was spent");
      expect(await s.usdc.balanceOf(seeded.agent.address)).to.equal(start);
    } finally {
      await remote.close();
    }
  });
});

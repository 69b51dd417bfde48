/**
 * `market services` and `market rent`, the built CLI in its own process against the stack, with a hosted agent on the
 * scripted model server selling one service: listing, renting with a status line, exact balances, and refusals.
 */
import { expect } from "chai";
import type { Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";
import { startModelServer, type ModelServer } from "../support/model-server";
import { MarketClient } from "../../sdk/src/client";
import { clientOf } from "../hosted/helpers";
import { RENTAL_PRICE, serviceStackFixture, untilAgentRegistered, type ServiceSeed } from "../services/helpers";

const ANSWER = "Review: the lease has two risks: an early termination fee and an uncapped service charge.";

describe("cli: market services and market rent", function () {
  this.timeout(180_000);
  let model: ModelServer;
  let s: Stack;
  let seeded: ServiceSeed;
  let env: NodeJS.ProcessEnv;
  let cwd: string;

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
    env = await cliEnv(s, s.poster);
    cwd = taskDir({ "prompt.txt": "Review the lease in the file: 24 months, service charge uncapped." });
    await untilAgentRegistered(new MarketClient(await s.clientOptions(s.poster)), seeded.service.id);
  });
  afterEach(async function () {
    await s.close();
  });

  it("lists the active services, and rents one: the status line, the output, the price paid exactly", async function () {
    const listed = await runCli(["services"], { env, cwd });
    expect(listed.status, listed.stderr).to.equal(0);
    expect(listed.stdout).to.contain(
      `${seeded.service.id}\t1.5 USDC\tContract risk review\tContract reviewer ${seeded.agent.address}\tsold 0\tapi\n\tSend a contract; get its risks.\n`,
    );
    expect(listed.stdout).to.contain("1 of 1 active service(s)");
    const other = await runCli(["services", "--agent", s.worker.address], { env, cwd });
    expect(other.stdout).to.equal("no active services\n");
    const asJson = await runCli(["services", "--json"], { env, cwd });
    expect(asJson.status, asJson.stderr).to.equal(0);
    const answer = JSON.parse(asJson.stdout) as { services: { id: number; price_raw: string }[]; total: number };
    expect(answer.total).to.equal(1);
    expect(answer.services.map((x) => [x.id, x.price_raw])).to.deep.equal([[seeded.service.id, RENTAL_PRICE.toString()]]);

    const before = await s.usdc.balanceOf(s.poster.address);
    const rented = await runCli(["rent", String(seeded.service.id), "--prompt-file", "prompt.txt", "--yes", "--wait", "90"], { env, cwd });
    expect(rented.status, rented.stderr).to.equal(0);
    expect(rented.stdout).to.contain(
      `service ${seeded.service.id}: Contract risk review by Contract reviewer (${seeded.agent.address}), 1.5 USDC per call`,
    );
    expect(rented.stdout).to.contain("paid: 1.5 USDC");
    expect(rented.stdout).to.contain("status: verified");
    expect(rented.stdout).to.contain(`output:\n${ANSWER}\n`);
    // Without a terminal the status line prints each new status once.
    expect(rented.stderr).to.match(/rental 0x[0-9a-f]{8}…: verified/);
    expect(before - (await s.usdc.balanceOf(s.poster.address))).to.equal(RENTAL_PRICE);
    expect(rented.stdout + rented.stderr).to.not.contain(env.MARKET_PRIVATE_KEY!.slice(2));

    // --json: the rental's answer alone on stdout (the report goes to stderr).
    const again = await runCli(
      ["rent", String(seeded.service.id), "--prompt", "Review the second lease, 12 months.", "--yes", "--wait", "90", "--json"],
      {
        env,
        cwd,
      },
    );
    expect(again.status, again.stderr).to.equal(0);
    const rental = JSON.parse(again.stdout) as { taskHash: string; status: string; output: string; amountRaw: string };
    expect(rental).to.deep.include({ status: "verified", output: ANSWER, amountRaw: RENTAL_PRICE.toString() });
    expect(again.stderr).to.contain("status: verified");
  });

  it("refuses without --yes off a terminal, a bad id, no prompt, and a deactivated service, paying nothing", async function () {
    const before = await s.usdc.balanceOf(s.poster.address);
    const unconfirmed = await runCli(["rent", String(seeded.service.id), "--prompt", "Review my lease."], { env, cwd });
    expect(unconfirmed.status).to.equal(1);
    expect(unconfirmed.stderr).to.contain("error CONFIRMATION_REQUIRED");
    const badId = await runCli(["rent", "first", "--prompt", "Review my lease.", "--yes"], { env, cwd });
    expect(badId.status).to.equal(2);
    expect(badId.stderr).to.contain("error VALIDATION_FAILED");
    const noPrompt = await runCli(["rent", String(seeded.service.id), "--yes"], { env, cwd });
    expect(noPrompt.status).to.equal(2);
    const unknown = await runCli(["rent", "424242", "--prompt", "Review my lease.", "--yes"], { env, cwd });
    expect(unknown.status).to.equal(1);
    expect(unknown.stderr).to.contain("error SERVICE_NOT_FOUND");

    await (await clientOf(s, s.stranger)).updateService({ agentId: seeded.agent.id, serviceId: seeded.service.id, active: false });
    const inactive = await runCli(["rent", String(seeded.service.id), "--prompt", "Review my lease.", "--yes"], { env, cwd });
    expect(inactive.status).to.equal(1);
    expect(inactive.stderr).to.contain("error SERVICE_NOT_ACTIVE");
    expect(await s.usdc.balanceOf(s.poster.address)).to.equal(before);
  });
});

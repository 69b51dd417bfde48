/**
 * Services and hosted agents from the web app in a real browser (issue 28, item 6), against a hosted agent on the
 * scripted OpenAI-compatible model server on loopback: an owner deploys an agent from the page (the deploy fee paid
 * from the browser wallet, model settings, a tool and its secret, the owner key derived from a wallet signature),
 * starts it and lists a service; another account rents it (the request encrypted in the page to the agent, the price
 * escrowed) and reads the verified output in the dialog; a second rental outlives the dialog's wait (RENTAL_WAIT_MS,
 * fast-forwarded on the page's clock) and its result shows later in My tasks; the owner updates the agent, stops it,
 * withdraws its earnings and exports its key, opened in the page. A declined transaction and a closed signature
 * prompt lose nothing (item 7). Each page is screenshotted and checked with axe-core.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { stackFixture, type Stack } from "../support/stack";
import { briefOf, startModelServer, type ModelServer } from "../support/model-server";
import { privateKeyOf } from "../server/harness";
import { fundGas, until } from "../hosted/helpers";
import { RENTAL_WAIT_MS } from "../../web/src/constants";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { collectPageErrors, freePort, launchBrowser, screenshot, seriousAccessibilityViolations, walletContext, type WalletLog } from "./harness";

const DEPLOY_FEE = 1_000_000n;
const PRICE = 1_500_000n;
const AGENT_SHARE = 1_350_000n; // the price less the 10% fee
const ANSWER = "Review: the agreement carries three risks: uncapped liability, a one-sided termination right and automatic renewal.";
const MODEL_KEY = "sk-model-secret-0123456789";
const TOOL_SECRET = "tool-secret-value-9876543210";

describe("web: renting a service and running hosted agents in chromium", function () {
  this.timeout(420_000);
  let browser: Browser;
  let s: Stack;
  let model: ModelServer;
  let ownerKey: string;
  let owner: { page: Page; log: WalletLog; context: BrowserContext };
  let renter: { page: Page; log: WalletLog; context: BrowserContext };
  let errors: string[];
  let agent: { id: number; address: string };
  let serviceId: number;
  /** Set by a test: the model holds its answer to a request whose brief says SLOW until this settles. */
  let hold: Promise<void> = Promise.resolve();

  async function pageAs(signer: HardhatEthersSigner) {
    const { context, log } = await walletContext(browser, { privateKey: privateKeyOf(signer), rpcUrl: s.rpcUrl, chainId: s.chainConfig.chainId });
    return { page: await context.newPage(), log, context };
  }

  async function check(page: Page, name: string) {
    await screenshot(page, name);
    const violations = await seriousAccessibilityViolations(page);
    expect(violations, JSON.stringify(violations, null, 1)).to.deep.equal([]);
  }

  async function signIn(page: Page) {
    await page.getByRole("banner").getByRole("button", { name: "Sign in with wallet" }).click();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
  }

  const usdc = (address: string) => s.usdc.balanceOf(address);
  const mine = async () =>
    (
      await s.call<{
        agents: Array<{ id: number; state: string; model: { name: string }; secrets: Array<{ kind: string; name: string }>; exports: number }>;
      }>("GET", "/api/v1/agents/mine", { key: ownerKey })
    ).body.data.agents;

  before(async function () {
    model = await startModelServer();
    model.setScript(async (request) => {
      if (briefOf(request).includes("SLOW")) await hold;
      return { content: ANSWER };
    });
    const port = await freePort(41200, 41299);
    const fixture = stackFixture(
      async (server) => {
        // The owner (the stranger) pays the deploy fee in USDC.
        await (await server.usdc.connect(server.admin).mint(server.stranger.address, 10_000_000n)).wait();
        return { ownerKey: await server.apiKeyFor(server.stranger) };
      },
      { web: true, publicUrl: `http://127.0.0.1:${port}`, hosted: { deployFeeRaw: DEPLOY_FEE } },
    );
    let seeded: { ownerKey: string };
    ({ stack: s, seeded } = await fixture());
    ownerKey = seeded.ownerKey;
    browser = await launchBrowser();
    owner = await pageAs(s.stranger);
    renter = await pageAs(s.poster);
    errors = collectPageErrors(owner.page);
  });
  after(async function () {
    await browser?.close();
    await s?.close();
    await model?.close();
  });

  it("deploys a hosted agent from the page: the deploy fee paid from the wallet, model settings, a tool and its secret", async function () {
    const { page } = owner;
    await page.goto(`${s.apiUrl}/my-agents`);
    await signIn(page);
    await page.getByText("You have no hosted agent yet.").waitFor();
    await check(page, "my-agents-empty");
    await page.getByRole("link", { name: "Deploy an agent" }).click();
    await page.getByTestId("deploy-fee").getByText("Deploying costs 1 USDC").waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Contract reviewer");
    await page.getByLabel(/^Instructions/).fill("Review the contract you are given and list its risks.");
    await page.getByLabel("Base URL").fill(model.baseUrl);
    await page.getByLabel("Model name").fill("scripted-model");
    await page.getByLabel(/^API key/).fill(MODEL_KEY);
    await page.getByLabel("summarization").check();
    const tools = [
      {
        name: "lookup",
        description: "Looks a clause up.",
        method: "GET",
        url: `${new URL(model.baseUrl).origin}/tools/lookup`,
        parameters: { type: "object", properties: { clause: { type: "string", description: "The clause." } }, required: ["clause"] },
        paramMapping: { clause: "query" },
        auth: { type: "bearer", keyName: "Authorization", secretRef: "lookup_key" },
      },
    ];
    await page.getByLabel(/^Tools/).fill(JSON.stringify(tools));
    await page.getByRole("button", { name: "Add a secret" }).click();
    await page.getByLabel("Secret name").fill("lookup_key");
    await page.getByLabel("Value").fill(TOOL_SECRET);
    await page.getByLabel("Start it at once").uncheck();
    await check(page, "deploy-agent");

    const before = { owner: await usdc(s.stranger.address), treasury: await usdc(s.treasury.address) };
    await page.getByRole("button", { name: "Deploy", exact: true }).click();
    await page.waitForURL(/\/my-agents\/[0-9]+$/, { timeout: 60_000 });
    await page.getByTestId("agent-state").getByText("stopped").waitFor();
    expect(before.owner - (await usdc(s.stranger.address))).to.equal(DEPLOY_FEE, "the fee is paid from the wallet");
    expect((await usdc(s.treasury.address)) - before.treasury).to.equal(DEPLOY_FEE, "to the treasury");
    // The wallet signed the owner key message before anything was paid.
    const signed = owner.log.requests.filter((r) => r.method === "personal_sign").map((r) => hexText((r.params as string[])[0]!));
    expect(signed.at(-1)).to.contain("asks for your hosted agents' owner key");

    const [deployed] = await mine();
    expect(deployed).to.deep.include({ state: "stopped", model: { name: "scripted-model" } });
    expect(deployed!.secrets.map((x) => x.name)).to.include.members(["lookup_key"]);
    agent = { id: deployed!.id, address: (await page.getByRole("link", { name: /^0x/ }).first().textContent())! };
    expect(page.url()).to.match(new RegExp(`/my-agents/${agent.id}$`));
    // Secrets are never shown again.
    const html = await page.content();
    expect(html).to.not.contain(MODEL_KEY);
    expect(html).to.not.contain(TOOL_SECRET);
    await page.getByTestId("agent-secrets").getByText("lookup_key").waitFor();
  });

  it("starts it and lists a service; another account cannot manage it", async function () {
    const { page } = owner;
    // Gas for the agent's own transactions (npm start sends it on the local stack).
    await fundGas(s.admin, agent.address);
    await page.getByRole("button", { name: "Start", exact: true }).click();
    await page.getByTestId("agent-state").getByText("running").waitFor();
    await page.getByLabel("Service name").fill("Contract risk review");
    await page.getByLabel("Price per call (USDC)").fill("1.5");
    await page.getByLabel(/^Description/).fill("Send a contract; get its risks.");
    await page.getByRole("button", { name: "List the service" }).click();
    await page.getByTestId("agent-services").getByText("Contract risk review", { exact: true }).waitFor();
    await check(page, "agent-manage");
    const listed = await s.call<{ services: Array<{ id: number; price_raw: string }> }>("GET", `/api/v1/agents/${agent.id}/services`, {
      key: ownerKey,
    });
    expect(listed.body.data.services.map((x) => x.price_raw)).to.deep.equal([PRICE.toString()]);
    serviceId = listed.body.data.services[0]!.id;

    // The renter's wallet sees no such agent of its own.
    await renter.page.goto(`${s.apiUrl}/my-agents/${agent.id}`);
    await signIn(renter.page);
    await renter.page.getByRole("alert").getByText("HOSTED_AGENT_NOT_FOUND").waitFor();
  });

  it("rents the service: a declined funding loses nothing; then the request is encrypted, the price escrowed, the output shown", async function () {
    const { page } = renter;
    await page.goto(`${s.apiUrl}/services`);
    await page.getByText("Contract risk review").waitFor();
    await check(page, "services-listed");
    // The agent has registered its key (it started): a private rental can be wrapped to it.
    await until(
      async () =>
        (await s.call<{ service: { agent_public_key: string | null } }>("GET", `/api/v1/marketplace/services/${serviceId}`)).body.data.service
          .agent_public_key !== null,
      30_000,
      "the agent registered",
    );
    await page.getByRole("link", { name: "Rent Contract risk review" }).click();
    const prompt = "Review this NDA: the recipient keeps information confidential for ten years, renewing yearly.";
    await page.getByLabel("Your request").fill(prompt);
    await check(page, "rent");

    // The person declines the first transaction in the wallet: the code in words, nothing paid, the request kept.
    const before = await usdc(s.poster.address);
    renter.log.decline.push("eth_sendTransaction");
    await page.getByRole("button", { name: /^Rent for 1\.5 USDC/ }).click();
    await page.getByTestId("rental-dialog").getByRole("alert").getByText("TX_REJECTED").waitFor();
    expect(await usdc(s.poster.address)).to.equal(before);
    expect(await page.getByLabel("Your request").inputValue()).to.equal(prompt);
    await page.getByRole("button", { name: "Close" }).click();

    const agentBefore = await usdc(agent.address);
    await page.getByRole("button", { name: /^Rent for 1\.5 USDC/ }).click();
    const output = page.getByTestId("rental-output");
    await output.waitFor({ timeout: 120_000 });
    expect(await output.textContent()).to.equal(ANSWER);
    await page.getByTestId("rental-result").getByText("the result passed its check").waitFor();
    await check(page, "rent-done");
    expect(before - (await usdc(s.poster.address))).to.equal(PRICE);
    expect((await usdc(agent.address)) - agentBefore).to.equal(AGENT_SHARE);
    // The request reached the model, and the rental is private: wrapped to the agent alone.
    expect(model.requests.some((r) => briefOf(r).includes(prompt))).to.equal(true);
    const taskHash = (await page.getByTestId("rental-result").getByRole("link").first().getAttribute("href"))!.split("/").pop()!;
    const keys = await s.db.selectFrom("task_keys").select("agent_address").where("task_hash", "=", taskHash).execute();
    expect(keys.map((k) => k.agent_address)).to.deep.equal([agent.address]);
  });

  it("stops waiting after RENTAL_WAIT_MS while the rental goes on; its result shows later in My tasks", async function () {
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    // The page's clock is Playwright's: it runs as usual until the test jumps it forward past the dialog's wait.
    await renter.context.clock.install();
    const page = await renter.context.newPage();
    await page.goto(`${s.apiUrl}/services/${serviceId}/rent`);
    await page.getByLabel("Your request").fill("SLOW: review this lease: the tenant may not sublet, and the rent rises 5% a year.");
    await page.getByRole("button", { name: /^Rent for 1\.5 USDC/ }).click();
    await until(() => model.requests.some((r) => briefOf(r).includes("SLOW")), 60_000, "the agent working on the rental");
    await page.getByTestId("rental-dialog").getByText("waiting for the agent's result").waitFor();
    await page.clock.fastForward(RENTAL_WAIT_MS + 1_000);
    const gaveUp = page.getByTestId("rental-gave-up");
    await gaveUp.waitFor({ timeout: 30_000 });
    expect(await gaveUp.textContent()).to.contain(`Stopped waiting after ${RENTAL_WAIT_MS / 60_000} minutes; the rental goes on`);
    await check(page, "rent-gave-up");
    const taskHash = (await gaveUp.getByRole("link").first().getAttribute("href"))!.split("/").pop()!;

    // The agent answers; the poster finds the rental verified in My tasks, live, and reads its output on its page.
    release();
    await gaveUp.getByRole("link", { name: "My tasks" }).click();
    const row = page.locator("tr", { has: page.locator(`a[href="/tasks/${taskHash}"]`) });
    await row.locator(".status", { hasText: "verified" }).waitFor({ timeout: 120_000 });
    await row.getByRole("link").click();
    await page.getByTestId("task-output").getByText(ANSWER).waitFor();
  });

  it("updates the agent, stops it, withdraws its earnings and exports its key; a closed signature prompt exports nothing", async function () {
    const { page } = owner;
    await page.reload();
    await page.getByTestId("agent-state").getByText("running").waitFor();
    await page.getByRole("textbox", { name: "Model name" }).fill("scripted-model-2");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved: applied at the agent's next start.").waitFor();
    expect((await mine())[0]!.model.name).to.equal("scripted-model-2");

    // A running agent is not withdrawn from: the API's code, in words.
    await page.getByRole("button", { name: "Withdraw", exact: true }).click();
    await page.getByRole("alert").getByText("AGENT_RUNNING").waitFor();
    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await page.getByTestId("agent-state").getByText("stopped").waitFor();
    const earned = await usdc(agent.address);
    expect(earned).to.equal(2n * AGENT_SHARE);
    const before = await usdc(s.stranger.address);
    await page.getByRole("button", { name: "Withdraw", exact: true }).click();
    await page.getByTestId("withdrawn").getByText("Withdrew 2.7 USDC").waitFor();
    expect((await usdc(s.stranger.address)) - before).to.equal(earned);
    expect(await usdc(agent.address)).to.equal(0n);

    // The owner closes the signature prompt: nothing is exported (no export recorded), the page says why.
    owner.log.decline.push("personal_sign");
    await page.getByRole("button", { name: "Export the wallet key" }).click();
    await page.getByRole("alert").getByText("WALLET_REFUSED").waitFor();
    expect((await mine())[0]!.exports).to.equal(0);
    await page.getByRole("button", { name: "Export the wallet key" }).click();
    const key = (await page.getByTestId("exported-key").textContent())!;
    expect(new Wallet(key).address).to.equal(agent.address, "the exported key opens the agent's wallet");
    expect((await mine())[0]!.exports).to.equal(1);
    await check(page, "agent-exported");
    await page.getByRole("button", { name: "Hide the key" }).click();
    expect(await page.getByTestId("exported-key").count()).to.equal(0);

    // Off sale: the catalogue no longer lists it.
    await page.getByRole("button", { name: "Take Contract risk review off sale" }).click();
    await page.getByRole("button", { name: "Put Contract risk review on sale" }).waitFor();
    await renter.page.goto(`${s.apiUrl}/services`);
    await renter.page.getByText("No service is offered yet.").waitFor();
    await page.goto(`${s.apiUrl}/my-agents`);
    await page.getByRole("link", { name: "Contract reviewer" }).waitFor();
    await check(page, "my-agents");
    expect(errors.filter((e) => /Content.Security.Policy|Refused to/i.test(e))).to.deep.equal([]);
  });
});

const hexText = (hex: string) => Buffer.from(hex.replace(/^0x/, ""), "hex").toString("utf8");

/**
 * The web app's signed-in scenario in a real browser (issue 28, items 3 and 5): a poster signs in with the injected
 * wallet, creates an API key (shown once, working), revokes it, posts a task with the single-task form (the wallet
 * approves and funds it on chain), watches it live while the example worker (`npm run demo:worker`) takes it and is
 * paid, and reads the verified output, which another signed-in wallet and a visitor do not see. Revoke all signs the
 * poster out everywhere. Each main page is screenshotted and checked with axe-core.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt } from "../support/cli";
import { privateKeyOf } from "../server/harness";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { collectPageErrors, freePort, launchBrowser, screenshot, seriousAccessibilityViolations, walletContext, type WalletLog } from "./harness";

const ROOT = path.resolve(__dirname, "../..");
const BRIEF = "Summarise the history of the printing press in five sentences";
const PRIVATE_BRIEF = "Summarise this confidential memo: the Q3 plan moves the Kiel warehouse to Aarhus in October.";
const CUSTODY_KEY = `0x${"42".repeat(32)}`;

describe("web: a poster signs in, manages keys, posts a task and reads its paid output", function () {
  this.timeout(300_000);
  let browser: Browser;
  let s: Stack;
  let workerKey: string;
  let page: Page;
  let wallet: WalletLog;
  let errors: string[];
  let taskHash: string;

  /** A page whose wallet is `signer`'s key on the stack's chain. */
  async function pageAs(signer: HardhatEthersSigner | undefined) {
    const { context, log } = await walletContext(
      browser,
      signer && { privateKey: privateKeyOf(signer), rpcUrl: s.rpcUrl, chainId: s.chainConfig.chainId },
    );
    return { page: await context.newPage(), log };
  }

  async function checkAccessibility(name: string) {
    await screenshot(page, name);
    const violations = await seriousAccessibilityViolations(page);
    expect(violations, JSON.stringify(violations, null, 1)).to.deep.equal([]);
  }

  before(async function () {
    ensureCliBuilt();
    const port = await freePort();
    const fixture = stackFixture(async (server) => ({ workerKey: await server.apiKeyFor(server.worker) }), {
      web: true,
      publicUrl: `http://127.0.0.1:${port}`,
      custodyKey: CUSTODY_KEY,
    });
    ({
      stack: s,
      seeded: { workerKey },
    } = await fixture());
    browser = await launchBrowser();
    ({ page, log: wallet } = await pageAs(s.poster));
    errors = collectPageErrors(page);
  });
  after(async function () {
    await browser?.close();
    await s?.close();
  });

  it("signs in with the injected wallet (a signed EIP-4361 message for this site)", async function () {
    await page.goto(`${s.apiUrl}/account`);
    await page.getByRole("main").getByRole("button", { name: "Sign in with wallet" }).click();
    await page.getByText(`Signed in as ${s.poster.address}`).waitFor();
    const signed = wallet.requests.find((r) => r.method === "personal_sign");
    expect(signed, "the wallet was asked to sign").to.not.equal(undefined);
    const message = Buffer.from((signed!.params as string[])[0]!.slice(2), "hex").toString("utf8");
    expect(message).to.contain(`127.0.0.1:${new URL(s.apiUrl).port} wants you to sign in with your Ethereum account:\n${s.poster.address}`);
  });

  it("creates an API key shown once that works, lists it, and revokes it", async function () {
    await page.getByLabel("Name").fill("laptop CLI");
    await page.getByRole("button", { name: "Create API key" }).click();
    const key = (await page.getByTestId("new-api-key").textContent())!;
    expect(key).to.match(/^sk_/);
    const whoami = await fetch(`${s.apiUrl}/api/v1/api-keys/whoami`, { headers: { "x-api-key": key } });
    expect(((await whoami.json()) as { data: { addresses: string[] } }).data.addresses).to.deep.equal([s.poster.address]);
    await checkAccessibility("account");
    await page.getByRole("button", { name: "I have copied it" }).click();
    expect(await page.getByTestId("new-api-key").count()).to.equal(0);
    await page.getByRole("button", { name: "Revoke laptop CLI" }).click();
    await page.getByText(/^revoked /).waitFor();
    const refused = await fetch(`${s.apiUrl}/api/v1/api-keys/whoami`, { headers: { "x-api-key": key } });
    expect(refused.status).to.equal(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal("INVALID_TOKEN");
  });

  it("shows a refused input with its code and sends nothing", async function () {
    await page.getByRole("link", { name: "My tasks" }).click();
    await page.getByRole("link", { name: "Post a task" }).click();
    await page.getByLabel(/^Brief/).fill(BRIEF);
    await page.getByLabel("Reward (USDC)").fill("2.5000001");
    await page.getByRole("button", { name: "Post and fund" }).click();
    await page
      .getByRole("alert")
      .getByText(/Reward: .*decimals/)
      .waitFor();
    expect(await page.getByRole("alert").locator("code").textContent()).to.match(/^[A-Z_]+$/);
    expect(wallet.requests.filter((r) => r.method === "eth_sendTransaction")).to.have.length(0);
  });

  it("posts a task with the form: the wallet approves and funds it, the page shows it listed", async function () {
    const usdcBefore = await s.usdc.balanceOf(s.poster.address);
    await page.getByLabel("Reward (USDC)").fill("2.5");
    await page.getByLabel("summarization").check();
    await screenshot(page, "post-task");
    await page.getByRole("button", { name: "Post and fund" }).click();
    await page.waitForURL(/\/tasks\/0x[0-9a-f]{64}$/, { timeout: 60_000 });
    taskHash = page.url().split("/").pop()!;
    await page.getByRole("heading", { name: "Your task" }).waitFor();
    expect(await page.locator(".status").first().textContent()).to.equal("open");
    // The funding (after an approval when the allowance did not cover the reward), to the escrow.
    const sent = wallet.requests.filter((r) => r.method === "eth_sendTransaction").map((r) => (r.params as Array<{ to: string }>)[0]!.to);
    expect(sent.at(-1)?.toLowerCase()).to.equal(s.escrowAddress.toLowerCase());
    expect(usdcBefore - (await s.usdc.balanceOf(s.poster.address))).to.equal(2_500_000n, "the reward is escrowed from the wallet");
  });

  /** Runs the example worker (`npm run demo:worker -- --once`) until it is paid for one task; answers what it printed. */
  async function workOneTask(): Promise<string> {
    const env = await cliEnv(s, s.worker, { apiKey: workerKey });
    const child = spawn("npm", ["run", "-s", "demo:worker", "--", "--once"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      expect(await exited).to.equal(0, stdout);
    } finally {
      if (child.exitCode === null) child.kill("SIGTERM");
    }
    return stdout;
  }

  it("follows the task live while the example worker takes it and is paid, then shows the verified output", async function () {
    const before = await s.usdc.balanceOf(s.worker.address);
    const stdout = await workOneTask();
    expect(stdout).to.contain(`task ${taskHash}: paid 2.25 USDC`);
    expect((await s.usdc.balanceOf(s.worker.address)) - before).to.equal(2_250_000n);
    // No reload: the page's event stream brought the new status.
    await page.locator(".status", { hasText: "verified" }).first().waitFor({ timeout: 60_000 });
    const output = (await page.getByTestId("task-output").textContent())!;
    expect(output).to.contain(`Answer for task ${taskHash.slice(0, 10)}`);
    await page.getByText(/2\.25 USDC to the worker/).waitFor();
    await checkAccessibility("task-poster");
    await page.getByRole("link", { name: "My tasks" }).click();
    await page.locator("tr", { hasText: BRIEF }).locator(".status", { hasText: "verified" }).waitFor();
    await checkAccessibility("my-tasks");
  });

  it("charts the worker's paid work on its agent page", async function () {
    await page.goto(`${s.apiUrl}/agents/${s.worker.address}`);
    await page.getByText("1 paid task, 2.25 USDC in the last 30 days (by listing day).").waitFor();
    expect(await page.locator("figure.chart svg rect.bar").count()).to.equal(1);
    await checkAccessibility("agent-paid");
  });

  it("shows the output to its poster only: not to another signed-in wallet, nor to a visitor", async function () {
    const other = await pageAs(s.stranger);
    await other.page.goto(`${s.apiUrl}/tasks/${taskHash}`);
    await other.page.getByRole("banner").getByRole("button", { name: "Sign in with wallet" }).click();
    await other.page.getByRole("button", { name: "Sign out" }).waitFor();
    await other.page.getByText("Timeline").waitFor();
    await other.page.locator(".status", { hasText: "verified" }).first().waitFor();
    expect(await other.page.getByTestId("task-output").count()).to.equal(0);
    expect(await other.page.getByText("Answer for task").count()).to.equal(0);
    const visitor = await pageAs(undefined);
    await visitor.page.goto(`${s.apiUrl}/tasks/${taskHash}`);
    await visitor.page.locator(".status", { hasText: "verified" }).first().waitFor();
    expect(await visitor.page.getByText("Answer for task").count()).to.equal(0);
  });

  it("posts a private task with the form: the brief encrypted in the page, wrapped with a custody copy; its output is its poster's only", async function () {
    const usdcBefore = await s.usdc.balanceOf(s.poster.address);
    await page.getByRole("link", { name: "My tasks" }).click();
    await page.getByRole("link", { name: "Post a task" }).click();
    await page.getByLabel("Privacy").selectOption("private");
    await page.getByLabel(/^Brief \(private/).fill(PRIVATE_BRIEF);
    await page.getByLabel("Reward (USDC)").fill("1.5");
    await page.getByLabel("summarization").check();
    await checkAccessibility("post-private-task");
    await page.getByRole("button", { name: "Post and fund" }).click();
    await page.waitForURL(/\/tasks\/0x[0-9a-f]{64}$/, { timeout: 60_000 });
    const privateHash = page.url().split("/").pop()!;
    await page.getByText("This task is private").waitFor();
    expect(usdcBefore - (await s.usdc.balanceOf(s.poster.address))).to.equal(1_500_000n, "the reward is escrowed from the wallet");

    // Listed without its brief; the brief key wrapped to the registered worker and, as the custody copy, to the
    // service's custody key (re-wrapped at accept for an agent registered later); the stored brief is ciphertext.
    const listing = await s.db
      .selectFrom("listings")
      .select(["privacy", "public_brief", "key_custody_blob", "root_hash"])
      .where("task_hash", "=", privateHash)
      .executeTakeFirstOrThrow();
    expect(listing).to.deep.include({ privacy: "private", public_brief: null });
    expect(listing.key_custody_blob).to.match(/^[0-9a-f]{200,}$/);
    const wrapped = await s.db.selectFrom("task_keys").select("agent_address").where("task_hash", "=", privateHash).execute();
    expect(wrapped.map((k) => k.agent_address)).to.deep.equal([s.worker.address]);
    const blob = (await (await fetch(`${s.apiUrl}/api/v1/storage/${listing.root_hash}`)).json()) as { data: { data: string } };
    const stored = Buffer.from(blob.data.data, "base64");
    expect(stored.length).to.be.greaterThan(PRIVATE_BRIEF.length);
    expect(stored.toString("utf8")).to.not.contain("confidential memo");

    // The worker opens the brief, delivers and is paid; the poster reads the output live.
    const stdout = await workOneTask();
    expect(stdout).to.contain(`task ${privateHash}: paid 1.35 USDC`);
    await page.locator(".status", { hasText: "verified" }).first().waitFor({ timeout: 60_000 });
    expect(await page.getByTestId("task-output").textContent()).to.contain(`Answer for task ${privateHash.slice(0, 10)}`);
    await checkAccessibility("task-private-poster");

    // Neither another signed-in wallet nor a visitor reads the output or the brief, in the page or from the API.
    const other = await pageAs(s.stranger);
    await other.page.goto(`${s.apiUrl}/tasks/${privateHash}`);
    await other.page.getByRole("banner").getByRole("button", { name: "Sign in with wallet" }).click();
    await other.page.getByRole("button", { name: "Sign out" }).waitFor();
    await other.page.locator(".status", { hasText: "verified" }).first().waitFor();
    expect(await other.page.getByTestId("task-output").count()).to.equal(0);
    expect(await other.page.getByText("Answer for task").count()).to.equal(0);
    expect(await other.page.getByText("confidential memo").count()).to.equal(0);
    const asVisitor = (await (await fetch(`${s.apiUrl}/api/v1/tasks/${privateHash}`)).json()) as {
      data: { meta: { publicBrief?: string }; state: { resultData?: { output?: string } } };
    };
    expect(asVisitor.data.meta.publicBrief).to.equal(undefined);
    expect(asVisitor.data.state.resultData?.output).to.equal(undefined);
  });

  it("revokes every key and session from account settings: the poster is signed out", async function () {
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("link", { name: "Account" }).click();
    await page.getByRole("button", { name: "Revoke all keys" }).click();
    await page.getByRole("banner").getByRole("button", { name: "Sign in with wallet" }).waitFor();
    expect(errors.filter((e) => /Content.Security.Policy|Refused to/i.test(e))).to.deep.equal([]);
  });
});

/**
 * The web app's public pages in a real browser (issue 28, item 2): the task browser, a task's page, the agents and
 * the leaderboard, an agent's page, the services catalogue and the skills registry, each loaded by its own URL (a
 * reload or a shared link), screenshotted, and checked with axe-core for serious or critical violations; no page
 * trips the Content-Security-Policy.
 */
import { expect } from "chai";
import type { Browser, Page } from "playwright-core";
import { stackFixture, type Stack } from "../support/stack";
import { collectPageErrors, freePort, launchBrowser, screenshot, seriousAccessibilityViolations, walletContext } from "./harness";

describe("web: public pages in chromium", function () {
  this.timeout(180_000);
  let browser: Browser;
  let s: Stack;
  let seeded: { tasks: string[] };
  let page: Page;
  let errors: string[];

  before(async function () {
    const port = await freePort();
    const fixture = stackFixture(
      async (server) => {
        await server.registerAgent(server.worker, ["summarization", "translation"]);
        const key = await server.apiKeyFor(server.poster);
        const tasks: string[] = [];
        for (const [i, brief] of ["Summarise the history of the printing press", "Translate 'good morning' into French"].entries()) {
          tasks.push(
            (await server.post(server.poster, key, server.publicTask(brief, { requiredCapabilities: [i === 0 ? "summarization" : "translation"] })))
              .taskHash,
          );
        }
        return { tasks };
      },
      { web: true, publicUrl: `http://127.0.0.1:${port}` },
    );
    ({ stack: s, seeded } = await fixture());
    browser = await launchBrowser();
    const { context } = await walletContext(browser);
    page = await context.newPage();
    errors = collectPageErrors(page);
  });
  after(async function () {
    await browser?.close();
    await s?.close();
  });

  /** Opens `path` as a fresh load, waits for `ready`, saves the screenshot and checks accessibility. */
  async function visit(path: string, ready: string, shot: string) {
    await page.goto(`${s.apiUrl}${path}`);
    await page.getByText(ready, { exact: false }).first().waitFor();
    await screenshot(page, shot);
    const violations = await seriousAccessibilityViolations(page);
    expect(violations, JSON.stringify(violations, null, 1)).to.deep.equal([]);
    expect(errors.filter((e) => /Content.Security.Policy|Refused to/i.test(e))).to.deep.equal([]);
  }

  it("browses every task and filters them by capability, status and reward, in the URL", async function () {
    await visit("/tasks", "Translate 'good morning' into French", "tasks");
    await page.getByText("Summarise the history of the printing press").waitFor();
    await page.getByLabel("Capability").selectOption("translation");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/\/tasks\?capability=translation$/);
    await page.getByText("Translate 'good morning' into French").waitFor();
    expect(await page.getByText("Summarise the history of the printing press").count()).to.equal(0);
    await page.getByLabel("Status").selectOption("cancelled");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText("No task matches.").waitFor();
    await page.goto(`${s.apiUrl}/tasks?min=5&max=5&status=open`);
    await page.getByText("Summarise the history of the printing press").waitFor();
    expect(await page.locator("table.list tbody tr").count()).to.equal(2);
    await page.getByLabel("Reward from (USDC)").fill("5.0000001");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("alert").getByText("The reward from is not an amount of USDC").waitFor();
  });

  it("opens a task's page with its state, timeline and public brief", async function () {
    await visit(`/tasks/${seeded.tasks[0]}`, "Timeline", "task");
    expect(await page.locator("pre.brief").textContent()).to.equal("Summarise the history of the printing press");
    expect(await page.locator(".status").first().textContent()).to.equal("open");
    await page.getByText("5 USDC").first().waitFor();
  });

  it("shows the agents, the leaderboard and an agent's page", async function () {
    await visit("/agents", "Registered agents", "agents");
    await page.getByRole("link", { name: s.worker.address }).first().click();
    await page.getByRole("heading", { name: "Reputation" }).waitFor();
    await page.getByText("summarization, translation").waitFor();
    await visit(`/agents/${s.worker.address}`, "Badges and stats per tag", "agent");
  });

  it("shows the services catalogue and the skills registry", async function () {
    await visit("/services", "No service is offered yet", "services");
    await visit("/skills", "No skill found", "skills");
  });

  it("answers an unknown page with the app's own not-found page", async function () {
    await visit("/no/such/page", "There is no page here", "not-found");
  });
});

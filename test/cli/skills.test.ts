/**
 * `market skills`: import a SKILL.md (refusals with their code, nothing stored), list the registry (--json), install
 * into and remove from the caller's hosted agent through the SDK's skills module; the SDK's updateAgent too.
 */
import { expect } from "chai";
import { startStack, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, runCli, taskDir } from "../support/cli";
import { MarketClient } from "../../sdk/src/client";

const SKILL_MD = `---
name: Invoice Reader
description: Reads invoices.
version: 1.2.0
---
Read every line item and total them.
`;

describe("CLI: market skills", function () {
  this.timeout(180_000);
  let s: Stack;

  before(async function () {
    ensureCliBuilt();
    s = await startStack();
  });
  after(async function () {
    await s.close();
  });

  it("imports a SKILL.md, lists the registry, installs into and removes from a hosted agent", async function () {
    const env = await cliEnv(s, s.stranger);
    const cwd = taskDir({ "SKILL.md": SKILL_MD, "broken/SKILL.md": "---\ndescription: no name\n---\nBody\n" });
    const refused = await runCli(["skills", "import", "broken/SKILL.md"], { env, cwd });
    expect(refused.status).to.not.equal(0);
    expect(refused.stderr).to.contain("SKILL_NAME_MISSING");
    expect(await s.db.selectFrom("skills").select("id").execute()).to.deep.equal([]);

    const imported = await runCli(["skills", "import", "SKILL.md", "--public", "--tag", "finance", "--json"], { env, cwd });
    expect(imported.status, imported.stderr).to.equal(0);
    const { skill } = JSON.parse(imported.stdout) as { skill: { slug: string; version: string; capabilities: string[]; instructions: string } };
    expect(skill).to.deep.include({
      slug: "invoice-reader",
      version: "1.2.0",
      capabilities: ["finance"],
      instructions: "Read every line item and total them.",
    });

    const listed = await runCli(["skills", "list", "--tag", "finance"], { env, cwd });
    expect(listed.status, listed.stderr).to.equal(0);
    expect(listed.stdout).to.contain("invoice-reader\tInvoice Reader 1.2.0\tinstalls 0\ttags finance\ttools 0");

    const client = new MarketClient(await s.clientOptions(s.stranger, env.MARKET_API_KEY));
    const { agent } = await client.deployAgent({
      displayName: "Invoice agent",
      instructions: "Answer.",
      model: { baseUrl: "http://127.0.0.1:9/v1", name: "m" },
      start: false,
    });
    const installed = await runCli(["skills", "install", "invoice-reader", "--agent", String(agent.id)], { env, cwd });
    expect(installed.status, installed.stderr).to.equal(0);
    expect(installed.stdout).to.contain(`installed invoice-reader 1.2.0 into agent ${agent.id}`);
    expect((await client.skills.installed({ agentId: agent.id })).map((k) => k.slug)).to.deep.equal(["invoice-reader"]);
    const twice = await runCli(["skills", "install", "invoice-reader", "--agent", String(agent.id)], { env, cwd });
    expect(twice.stderr).to.contain("SKILL_ALREADY_INSTALLED");
    expect((await client.skills.get("invoice-reader")).installs).to.equal(1);

    const removed = await runCli(["skills", "remove", "invoice-reader", "--agent", String(agent.id)], { env, cwd });
    expect(removed.status, removed.stderr).to.equal(0);
    expect(await client.skills.installed({ agentId: agent.id })).to.deep.equal([]);

    // The SDK's update of the agent (applied at its next start).
    const updated = await client.skills.updateAgent({ agentId: agent.id, instructions: "Answer in French.", capabilities: ["finance"] });
    expect(updated).to.deep.include({ instructions: "Answer in French.", capabilities: ["finance"] });
  });
});

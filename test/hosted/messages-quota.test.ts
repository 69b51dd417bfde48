/**
 * Issue 23 item 8: owner ↔ agent messages had no quota and no expiry (300 × 4,000 characters accepted, all kept after
 * the agent was deleted). Now each side sends at most 100 messages in any 24 hours, a conversation keeps its latest
 * 200 and none older than 30 days, and its messages go with the agent.
 */
import { expect } from "chai";
import { startTestServer, type TestServer } from "../server/harness";
import { expectError, expectOk } from "../server/expect";
import { MESSAGE_RETENTION_MS, MESSAGES_KEPT, MESSAGES_PER_DAY } from "../../server/hosted/messages";

describe("hosted agents: owner messages, quota, retention and deletion (issue 23 item 8)", function () {
  this.timeout(120_000);
  let s: TestServer;

  before(async function () {
    s = await startTestServer();
  });
  after(async function () {
    await s.close();
  });

  it("refuses the owner's message past 100 a day, trims to the latest 200 and 30 days, and deletes them with the agent", async function () {
    const key = await s.apiKeyFor(s.stranger);
    const agent = await s.deployHostedAgent(s.stranger, key);
    const send = (body: string) => s.call("POST", `/api/v1/agents/${agent.id}/messages`, { key, body: { body } });
    const count = async () => (await s.db.selectFrom("hosted_agent_messages").select("id").where("agent_id", "=", agent.id).execute()).length;

    // Kept from before: 250 messages of the agent's a day old, and 5 of the owner's older than the retention.
    const at = Date.now();
    await s.db
      .insertInto("hosted_agent_messages")
      .values([
        ...Array.from({ length: 5 }, (_, i) => ({
          agent_id: agent.id,
          sender: "owner" as const,
          body: `ancient ${i}`,
          created_at: at - MESSAGE_RETENTION_MS - 1_000,
        })),
        ...Array.from({ length: 250 }, (_, i) => ({
          agent_id: agent.id,
          sender: "agent" as const,
          body: `note ${i}`,
          created_at: at - 25 * 60 * 60_000,
        })),
      ])
      .execute();

    for (let i = 0; i < MESSAGES_PER_DAY; i++) expectOk(await send(`${"x".repeat(4_000 - 4)}${String(i).padStart(4, "0")}`));
    expectError(await send("one too many"), "MESSAGE_QUOTA_EXCEEDED");
    expect(await count()).to.equal(MESSAGES_KEPT);
    const shown = expectOk(await s.call<{ messages: Array<{ body: string }> }>("GET", `/api/v1/agents/${agent.id}/messages`, { key })).messages;
    expect(shown).to.have.length(MESSAGES_KEPT);
    expect(shown.some((m) => m.body.startsWith("ancient"))).to.equal(false);
    expect(shown.at(-1)!.body.endsWith("0099")).to.equal(true);

    // The agent's side has a quota of its own: the owner's spent quota does not stop it, its own 100 a day does.
    // Its runner's token (no runner runs here), valid while the agent is marked running.
    const setState = (state: "running" | "stopped") => s.db.updateTable("hosted_agents").set({ state }).where("id", "=", agent.id).execute();
    await setState("running");
    const token = await s.agentToken(agent.id);
    await s.db
      .insertInto("hosted_agent_messages")
      .values(
        Array.from({ length: MESSAGES_PER_DAY - 1 }, (_, i) => ({
          agent_id: agent.id,
          sender: "agent" as const,
          body: `today ${i}`,
          created_at: at - 60_000,
        })),
      )
      .execute();
    const reply = (body: string) => s.call("POST", `/api/v1/agents/${agent.id}/messages`, { key: token, body: { body } });
    expectOk(await reply("the agent's 100th today"));
    expectError(await reply("the agent's 101st"), "MESSAGE_QUOTA_EXCEEDED");
    expect(await count()).to.equal(MESSAGES_KEPT);
    await setState("stopped");

    expectOk(await s.call("DELETE", `/api/v1/agents/${agent.id}`, { key }));
    expect(await count()).to.equal(0);
  });
});

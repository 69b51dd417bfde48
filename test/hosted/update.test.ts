/**
 * Agents that change after deploy: the owner's PATCH (instructions, model, tools, capabilities, minimum reward) is
 * stored at once and applies at the next start only; the agent keeps its id, wallet and reputation. Refusals: another
 * account (NOT_AGENT_OWNER), a tool naming a secret the agent does not hold, nothing changed by a refused update.
 */
import { expect } from "chai";
import type { Stack } from "../support/stack";
import type { ModelServer } from "../support/model-server";
import { expectError, expectOk } from "../server/expect";
import type { RunningConfig } from "../../server/hosted/store";
import { json } from "../../server/db";
import { agentOptions, keyedClientOf, startedAgent, statusOf, until, sharedStackAndModel } from "./helpers";

describe("hosted agents: updates by the owner", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;

  sharedStackAndModel((stack, server) => ((s = stack), (model = server)));

  it("applies an update of a running agent only after a restart, keeping its wallet and reputation", async function () {
    model.setScript((request) =>
      request.model === "second-model"
        ? { content: "Second version summary: the memo sets the budget and names who approves it." }
        : { content: "First version summary: the memo sets the budget and names who approves it." },
    );
    const { client, agent } = await startedAgent(s, s.stranger, agentOptions(model));
    const { key: ownerKey } = await keyedClientOf(s, s.stranger);
    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const postFor = async (instructions: string) =>
      (
        await poster.postTask({
          instructions,
          amountRaw: 1_000_000n,
          privacy: "public",
          capabilities: ["summarization"],
          targetExecutor: agent.address,
        })
      ).taskHash!;

    const first = await postFor("Summarise the budget memo.");
    await until(async () => (await statusOf(s, posterKey, first)).status === "verified", 60_000, "the first task verified");
    const reputation = async () =>
      expectOk(await s.call<{ tasksCompleted: number; offChainTasksCompleted: number }>("GET", `/api/v1/reputation/${agent.address}`));
    const before = await reputation();

    // Refusals change nothing.
    const { key: strangerKey } = await keyedClientOf(s, s.worker);
    expectError(await s.call("PATCH", `/api/v1/agents/${agent.id}`, { key: strangerKey, body: { instructions: "Obey me." } }), "NOT_AGENT_OWNER");
    const keyed = {
      name: "keyed",
      description: "Needs a key the agent lacks.",
      parameters: { type: "object", properties: {} },
      method: "GET",
      url: `${model.origin}/tools/keyed`,
      auth: { type: "bearer", keyName: "Authorization", secretRef: "absent" },
    };
    expectError(await s.call("PATCH", `/api/v1/agents/${agent.id}`, { key: ownerKey, body: { tools: [keyed] } }), "VALIDATION_FAILED");
    expectError(
      await s.call("PATCH", `/api/v1/agents/${agent.id}`, { key: ownerKey, body: { tools: [{ ...keyed, name: "k".repeat(65), auth: undefined }] } }),
      "TOOL_NAME_TOO_LONG",
    );

    // The update is stored at once; the running agent keeps what it started with.
    const updated = expectOk(
      await s.call<{ agent: { instructions: string; capabilities: string[]; minReward: string | null; tools: Array<{ name: string }> } }>(
        "PATCH",
        `/api/v1/agents/${agent.id}`,
        {
          key: ownerKey,
          body: {
            instructions: "Summarise in one paragraph, second version.",
            model: { baseUrl: model.baseUrl, name: "second-model" },
            capabilities: ["summarization", "finance"],
            minReward: "500000",
            tools: [{ ...keyed, name: "almanac", auth: undefined }],
          },
        },
      ),
    ).agent;
    expect(updated).to.deep.include({
      instructions: "Summarise in one paragraph, second version.",
      capabilities: ["summarization", "finance"],
      minReward: "500000",
    });
    expect(updated.tools.map((t) => t.name)).to.deep.equal(["almanac"]);
    const running = async () =>
      json.read<RunningConfig>(
        (await s.db.selectFrom("hosted_agents").select("running_config").where("id", "=", agent.id).executeTakeFirstOrThrow()).running_config,
      )!;
    expect((await running()).model.name).to.equal("scripted-model");
    const second = await postFor("Summarise the budget memo again.");
    await until(async () => (await statusOf(s, posterKey, second)).status === "verified", 60_000, "the second task verified");
    expect((await statusOf(s, posterKey, second)).output).to.match(/^First version/);

    // After a restart: the new model, instructions, tools and tags; the same id, wallet and reputation.
    await client.restartAgent({ agentId: agent.id });
    const now = await running();
    expect(now).to.deep.include({
      instructions: "Summarise in one paragraph, second version.",
      capabilities: ["summarization", "finance"],
      minReward: "500000",
    });
    expect(now.model.name).to.equal("second-model");
    expect(now.tools.map((t) => t.name)).to.deep.equal(["almanac"]);
    const third = await postFor("Summarise the budget memo a third time.");
    await until(async () => (await statusOf(s, posterKey, third)).status === "verified", 60_000, "the third task verified");
    expect((await statusOf(s, posterKey, third)).output).to.match(/^Second version/);
    const mine = (await client.myAgents()).agents.find((a) => a.id === agent.id)!;
    expect(mine.address).to.equal(agent.address);
    const after = await reputation();
    expect(before.offChainTasksCompleted).to.equal(1);
    expect(after.offChainTasksCompleted).to.equal(3);
    await client.stopAgent({ agentId: agent.id });
  });
});

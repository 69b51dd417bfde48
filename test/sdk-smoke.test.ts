import { expect } from "chai";
import { startStack, type Stack } from "./support/stack";
import { MarketClient } from "../sdk/src/client";

describe("sdk smoke", function () {
  let s: Stack;
  beforeEach(async function () {
    s = await startStack();
  });
  afterEach(async function () {
    await s.close();
  });

  it("posts public and private tasks in one run, and an agent delivers one", async function () {
    const agent = new MarketClient(await s.clientOptions(s.worker));
    const { profile } = await agent.createAgent({
      privateKey: (await s.clientOptions(s.worker)).executor.privateKey,
      supportedChains: ["arc"],
      capabilities: ["summarization"],
    });
    expect(profile.address).to.equal(s.worker.address);
    const poster = new MarketClient(await s.clientOptions(s.poster));
    const result = await poster.postTasks([
      { instructions: "Summarise the causes of the French Revolution.", amountRaw: 2_000_000n, privacy: "public" },
      { instructions: "Summarise this private memo about the budget.", reward: "1.5", capabilities: ["summarization"] },
    ]);
    expect(result).to.include({ posted: 2, unlisted: 0, failed: 0, skipped: 0, stopped: false });
    await s.sync();
    const { tasks } = await agent.browseA2ATasks({ capabilities: ["summarization"] });
    expect(tasks).to.have.length(2);
    const priv = tasks.find((t) => t.meta.privacy === "private")!;
    const assigned = await agent.acceptTask(priv.meta.taskHash);
    expect(await agent.openBrief(assigned)).to.equal("Summarise this private memo about the budget.");
    const finalized = await agent.deliverResult({
      taskHash: priv.meta.taskHash,
      output: "The memo asks for a ten percent cut in travel and a freeze on hiring.",
    });
    expect(finalized.status).to.equal("verified");
  });
});

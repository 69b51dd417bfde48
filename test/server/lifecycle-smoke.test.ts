import { expect } from "chai";
import { startTestServer, type TestServer } from "./harness";
import { lifecycle } from "./lifecycle-harness";
import { expectOk } from "./expect";

describe("lifecycle smoke", function () {
  let s: TestServer;
  beforeEach(async function () {
    s = await startTestServer();
  });
  afterEach(async function () {
    await s.close();
  });

  it("accepts, delivers, fails once, redelivers and is paid", async function () {
    const l = lifecycle(s);
    const agentKey = await s.registerAgent(s.worker, ["summarization"]);
    const posterKey = await s.apiKeyFor(s.poster);
    const { taskHash } = await s.post(
      s.poster,
      posterKey,
      s.publicTask("Summarise the plot of Hamlet in one paragraph.", { verificationCriteria: { min_length: 40, contains_keywords: ["Hamlet"] } }),
    );
    const accepted = expectOk(await l.accept(agentKey, taskHash));
    expect(accepted.status).to.equal("assigned");
    expect(await l.status(taskHash)).to.equal("assigned");
    const bad = await l.deliverAndFinalize(s.worker, agentKey, taskHash, "Too short.");
    expect(bad.status).to.equal("failed");
    expect(bad.verificationResult?.passed).to.equal(false);
    const good = await l.deliverAndFinalize(
      s.worker,
      agentKey,
      taskHash,
      "Prince Hamlet seeks revenge on his uncle Claudius, who murdered his father and married his mother.",
    );
    expect(good.status).to.equal("verified");
    expect(await l.status(taskHash)).to.equal("verified");
    const rep = expectOk(await s.call<{ reputation: number; offChainTasksCompleted: number }>("GET", `/api/v1/reputation/${s.worker.address}`));
    expect(rep.reputation).to.equal(41);
    expect(rep.offChainTasksCompleted).to.equal(1);
  });
});

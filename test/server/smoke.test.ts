import { expect } from "chai";
import { startTestServer, type TestServer } from "./harness";

describe("server smoke", function () {
  let s: TestServer;
  beforeEach(async function () {
    s = await startTestServer();
  });
  afterEach(async function () {
    await s.close();
  });

  it("posts a public task and a private task, and browses them", async function () {
    const agentKey = await s.registerAgent(s.worker, ["web_research"]);
    const posterKey = await s.apiKeyFor(s.poster);
    const pub = await s.post(
      s.poster,
      posterKey,
      s.publicTask("Find three facts about the moon, with sources.", { requiredCapabilities: ["web_research"] }),
    );
    const priv = await s.privateTask("Summarise this secret memo.", [s.worker], posterKey);
    const posted = await s.post(s.poster, posterKey, priv.fields);
    const browse = await s.call<{ tasks: Array<{ state: { taskId: string; status: string } }>; total: number }>(
      "GET",
      "/api/v1/a2a/tasks?capabilities=web_research",
      { key: agentKey },
    );
    expect(browse.status).to.equal(200);
    expect(browse.body.data.tasks.map((t) => t.state.taskId)).to.have.members([pub.taskHash, posted.taskHash]);
    const none = await s.call<{ tasks: unknown[] }>("GET", "/api/v1/a2a/tasks", { key: agentKey });
    expect(none.body.data.tasks).to.have.length(1);
  });
});

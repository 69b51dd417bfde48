/**
 * Every hosted runner calls the API from this host, so they all share its per-IP window: enough running agents (or
 * anyone else calling from the host) would push every hosted agent into 429s. This process's own runner tokens skip
 * the per-IP window (they keep the per-key one); no other credential does, an outside `ha_` token or API key included.
 */
import { startStack, type Stack } from "../support/stack";
import { startModelServer, type ModelServer } from "../support/model-server";
import { expectError, expectOk } from "../server/expect";
import { agentOptions, clientOf, fundGas, until, keyedClientOf } from "./helpers";

/** The test's own calls, as a client elsewhere (the server trusts X-Forwarded-For here). */
const ELSEWHERE = { "x-forwarded-for": "203.0.113.7" };

describe("hosted agents: the API's per-IP window", function () {
  this.timeout(120_000);
  let s: Stack;
  let model: ModelServer;

  beforeEach(async function () {
    s = await startStack({ rateLimit: { perIp: 80, perKey: 1e9, windowMs: 600_000 }, trustProxy: true });
    model = await startModelServer();
    model.setScript(() => ({ content: "Summary: the report describes the move of the warehouse and what it costs." }));
  });
  afterEach(async function () {
    await s.close();
    await model.close();
  });

  it("a running hosted agent keeps working while the host's per-IP window is used up; other credentials from the host get 429", async function () {
    const owner = s.stranger;
    const ownerClient = await clientOf(s, owner);
    const ownerKey = (await s.clientOptions(owner)).apiKey;
    const agent = (await ownerClient.deployAgent(agentOptions(model))).agent;
    await fundGas(owner, agent.address);
    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const task = (
      await poster.postTask({
        instructions: "Summarise the warehouse report.",
        amountRaw: 1_000_000n,
        privacy: "public",
        capabilities: ["summarization"],
      })
    ).taskHash!;

    // Everything calling from this host uses the window up.
    for (let i = 0; (await s.call("GET", "/health")).status !== 429; i++) if (i > 200) throw new Error("the per-IP window never closed");
    expectError(await s.call("GET", "/api/v1/agents/mine", { key: ownerKey }), "RATE_LIMITED");
    // A token no run of this process holds claims nothing, however it is spelled.
    expectError(await s.call("GET", "/api/v1/api-keys/whoami", { key: `ha_${"x".repeat(43)}` }), "RATE_LIMITED");

    // Started (by its owner, calling from elsewhere), the agent registers, takes the task and delivers it from this host.
    expectOk(await s.call("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey, headers: ELSEWHERE }));
    const status = async () =>
      (await s.call<{ state: { status: string } }>("GET", `/api/v1/tasks/${task}`, { key: posterKey, headers: ELSEWHERE })).body.data?.state.status;
    await until(async () => (await status()) === "verified", 60_000, "the task verified");
    // The host's window is still closed to everyone else.
    expectError(await s.call("GET", "/health"), "RATE_LIMITED");
  });
});

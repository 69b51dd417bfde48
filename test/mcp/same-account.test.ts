/**
 * Issue 23 item 5: a hosted agent's wallet is its owner's account everywhere the same-account rule applies. A task the
 * account's hosted agent posts over /mcp (`X-Market-Agent`) cannot be taken by the same account's other agent, and the
 * reputation projection's rule (server/db/same-account.ts) counts the hosted wallet as the owner's.
 */
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { fundGas } from "../hosted/helpers";
import { httpMcp, type Mcp } from "./helpers";
import { posterAccountOf, sameAccount } from "../../server/db/same-account";

const sameAccountStack = stackFixture(async (s) => {
  const ownerKey = await s.apiKeyFor(s.poster);
  const agent = await s.deployHostedAgent(s.poster, ownerKey);
  await fundGas(s.poster, agent.address);
  await (await s.usdc.connect(s.admin).mint(agent.address, 5_000_000n)).wait();
  // The same account's own wallet, registered as a worker.
  const workerKey = await s.registerAgent(s.poster, ["web_research"]);
  await s.registerAgent(s.worker, ["web_research"]);
  return { ownerKey, workerKey, agent };
});

describe("same account: a hosted agent's wallet is its owner's (issue 23 item 5)", function () {
  this.timeout(120_000);
  let s: Stack;
  let mcp: Mcp | undefined;

  afterEach(async function () {
    await mcp?.close();
    mcp = undefined;
    await s?.close();
  });

  it("refuses the account's own agent a task its hosted agent posted over /mcp (OWN_TASK); another account's agent may take it", async function () {
    const { stack, seeded } = await sameAccountStack();
    s = stack;
    const { ownerKey, workerKey, agent } = seeded;
    mcp = await httpMcp(s.apiUrl, ownerKey, { "x-market-agent": String(agent.id) });
    const args = {
      tasks: [
        {
          instructions: "Name three rivers of Europe and the seas they flow into.",
          amount: "1000000",
          privacy: "public",
          capabilities: ["web_research"],
        },
      ],
      idempotencyKey: "same-account-1",
    };
    const quote = await mcp.call("post_tasks", args);
    expect(quote.isError, quote.text).to.equal(false);
    const done = await mcp.call("post_tasks", { ...args, confirm: true, quoteId: quote.data.quoteId });
    expect(done.isError, done.text).to.equal(false);
    const taskHash = String((done.data.results as Array<{ taskHash: string }>)[0]!.taskHash);
    await s.sync();

    expect(await posterAccountOf(s.db, agent.address)).to.be.a("number");
    expect(await sameAccount(s.db, agent.address, s.poster.address)).to.equal(true);
    expect(await sameAccount(s.db, agent.address, s.worker.address)).to.equal(false);

    const own = await s.call("POST", `/api/v1/a2a/tasks/${taskHash}/accept`, { key: workerKey });
    expect([own.status, own.body.error?.code]).to.deep.equal([403, "OWN_TASK"]);
    const otherKey = await s.apiKeyFor(s.worker, "agent");
    const other = await s.call("POST", `/api/v1/a2a/tasks/${taskHash}/accept`, { key: otherKey });
    expect(other.status, JSON.stringify(other.body)).to.equal(200);
  });
});

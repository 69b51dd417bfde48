/**
 * The official A2A client (`@a2a-js/sdk`, v1.0 protocol) against the service over HTTP on loopback: it connects from
 * the platform card's URL alone (`ClientFactory.createFromUrl`), then lists, gets, sends a message and asks to cancel.
 */
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { ClientFactory, type Client } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { startTestServer, type TestServer } from "./harness";
import { freePort } from "../../scripts/lib/local-chain";

describe("server: A2A with the official client", function () {
  let s: TestServer;
  let base: string;
  let client: Client;
  let taskHash: string;
  let tagged: string;
  let agentKey: string;

  before(async function () {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    s = await startTestServer({ publicUrl: base });
    await s.app.listen({ host: "127.0.0.1", port });
    const key = await s.apiKeyFor(s.poster);
    taskHash = (await s.post(s.poster, key, s.publicTask("Name three rivers in Europe."))).taskHash.toLowerCase();
    tagged = (
      await s.post(s.poster, key, s.publicTask("Summarise the history of the printing press.", { requiredCapabilities: ["summarization"] }))
    ).taskHash.toLowerCase();
    agentKey = await s.registerAgent(s.worker, ["summarization", "web_research"]);
    client = await new ClientFactory().createFromUrl(base);
  });
  after(async function () {
    await s.close();
  });

  it("connects from the card at /.well-known/agent-card.json over JSON-RPC 1.0", async function () {
    const card = await client.getAgentCard();
    expect(card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion])).to.deep.include(["JSONRPC", "1.0"]);
    expect(card.supportedInterfaces[0]!.url).to.equal(`${base}/a2a/v1`);
  });

  it("lists the open tasks", async function () {
    const page = await client.listTasks({} as Parameters<Client["listTasks"]>[0]);
    expect(page.tasks.map((t) => t.id)).to.include(taskHash);
    expect(page.totalSize).to.be.at.least(1);
  });

  it("lists a tagged task to a caller that names its tags or sends a key of an agent registered with them (issue 29)", async function () {
    const list = (options?: Parameters<Client["listTasks"]>[1]) =>
      client.listTasks({} as Parameters<Client["listTasks"]>[0], options).then((page) => page.tasks.map((t) => t.id));
    // Naming no tag lists only untagged tasks (the spec's rule), as before.
    expect(await list()).to.not.include(tagged);
    // Without a key: the tags as a service parameter (the X-Market-Capabilities header), as the card says.
    expect(await list({ serviceParameters: { "X-Market-Capabilities": "summarization" } })).to.include(tagged);
    expect(await list({ serviceParameters: { "X-Market-Capabilities": "web_research" } })).to.not.include(tagged);
    // With a key: the caller's registered capabilities.
    expect(await list({ serviceParameters: { "X-API-Key": agentKey } }))
      .to.include(tagged)
      .and.include(taskHash);
    // Or on the endpoint's URL.
    const answer = await fetch(`${base}/a2a/v1?capabilities=summarization`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
    });
    const listed = ((await answer.json()) as { result: { tasks: Array<{ id: string }> } }).result.tasks.map((t) => t.id);
    expect(listed).to.include(tagged);
    const card = await client.getAgentCard();
    expect(card.skills[0]!.description).to.contain("X-Market-Capabilities").and.contain("X-API-Key");
  });

  it("gets one task by its hash, with its state", async function () {
    const task = await client.getTask({ id: taskHash } as Parameters<Client["getTask"]>[0]);
    expect(task.id).to.equal(taskHash);
    expect(task.status?.state).to.equal(TaskState.TASK_STATE_SUBMITTED);
  });

  it("sends a message and reads the acknowledgement", async function () {
    const answer = await client.sendMessage({
      message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: "hello" } }] },
    } as unknown as Parameters<Client["sendMessage"]>[0]);
    const reply = answer as { role: Role; parts: Array<{ content?: { $case: string; value: string } }> };
    expect(reply.role).to.equal(Role.ROLE_AGENT);
    expect(reply.parts[0]!.content?.value).to.contain("only acknowledges messages");
  });

  it("is told a task cannot be cancelled here (cancel on chain)", async function () {
    const error = await client.cancelTask({ id: taskHash } as Parameters<Client["cancelTask"]>[0]).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Error);
    expect((error as { envelopeCode?: number }).envelopeCode).to.equal(-32004);
    expect((error as Error).message).to.match(/cancelled on chain/);
  });
});

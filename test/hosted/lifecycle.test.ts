/**
 * A hosted agent end to end, against a scripted OpenAI-compatible model server on loopback: deployed with a fee,
 * started, takes a public and a private task, calls an HTTP tool (with a custodied secret) and a built-in tool,
 * delivers, is verified and paid on chain; stopped, withdrawn to its owner; its exported key opens with the owner's
 * key to the wallet that was paid. Every log line, answer, prompt and result is checked for secrets.
 */
import { sweepFeesToTreasury } from "../support/fees";
import { expect } from "chai";
import { Wallet } from "ethers";
import { decrypt as eciesDecrypt } from "eciesjs";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, briefOf, hasToolResult, type ModelServer } from "../support/model-server";
import { privateKeyOf } from "../server/harness";
import { decryptExportedKey } from "../../sdk/src/client";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import type { MarketEvent } from "@market/core/api";
import { agentOptions, deliveriesOf, fundGas, statusOf, until, keyedClientOf } from "./helpers";

const MODEL_KEY = "sk-model-secret-0123456789abcdef";
const TOOL_SECRET = "tool-secret-fedcba9876543210";
const FEE = 2_000_000n;

describe("hosted agents: deploy, work, withdraw, export", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;
  const logLines: string[] = [];

  beforeEach(async function () {
    logLines.length = 0;
    s = await startStack({
      hosted: { deployFeeRaw: FEE },
      logger: { level: "debug", stream: { write: (line: string) => logLines.push(line) } },
    });
    model = await startModelServer();
  });
  afterEach(async function () {
    await s.close();
    await model.close();
  });

  it("is deployed with a fee, takes a public and a private task with tools, is paid exactly, withdrawn and exported", async function () {
    const owner = s.stranger;
    const ownerKey = privateKeyOf(owner);
    await (await s.usdc.connect(s.admin).mint(owner.address, 10_000_000n)).wait();
    const { client: ownerClient, key: ownerApiKey } = await keyedClientOf(s, owner);
    const answers: unknown[] = [];
    const seen = <T>(value: T): T => {
      answers.push(value);
      return value;
    };

    // The model: step 1 calls the lookup tool (public task) or messages the poster (private task); step 2 answers.
    model.setScript((request) => {
      const brief = briefOf(request);
      if (!hasToolResult(request)) {
        return brief.includes("canal")
          ? { toolCalls: [{ name: "lookup", arguments: { topic: "suez canal" } }] }
          : { toolCalls: [{ name: "send_message", arguments: { to: "poster", body: "Working on your board minutes now." } }] };
      }
      return brief.includes("canal")
        ? { content: "Summary: the Suez canal opened in 1869 and cut the sea route between Europe and Asia by thousands of miles." }
        : { content: "Summary: the board minutes report revenue up four percent and a new plant planned for next year." };
    });
    // The HTTP tool echoes the headers it got: the secret must reach the tool and never the model.
    model.setTool((request) => ({ body: JSON.stringify({ fact: "opened 1869", sawAuthorization: request.headers.authorization }) }));

    const treasuryBefore = await s.usdc.balanceOf(s.treasury.address);
    const ownerBefore = await s.usdc.balanceOf(owner.address);
    expect(seen(await ownerClient.deployFee())).to.deep.include({
      chain: "arc",
      amount: FEE.toString(),
      recipient: s.treasury.address,
      token: s.token,
      required: true,
    });
    const deployed = seen(
      await ownerClient.deployAgent(
        agentOptions(model, {
          model: { baseUrl: model.baseUrl, name: "scripted-model", apiKey: MODEL_KEY },
          tools: [
            {
              name: "lookup",
              description: "Look up a fact about a topic.",
              parameters: { type: "object", properties: { topic: { type: "string", description: "The topic." } }, required: ["topic"] },
              method: "GET",
              url: `${model.origin}/tools/lookup`,
              paramMapping: { topic: "query" },
              auth: { type: "bearer", keyName: "Authorization", secretRef: "lookup_key" },
            },
          ],
          toolSecrets: { lookup_key: TOOL_SECRET },
        }),
      ),
    );
    const agent = deployed.agent;
    expect(agent.state).to.equal("stopped");
    expect(agent.ownerAddress).to.equal(owner.address);
    expect(agent.secrets).to.deep.equal([
      { kind: "model", name: "model" },
      { kind: "tool", name: "lookup_key" },
      { kind: "wallet", name: "wallet" },
    ]);
    expect(deployed.fee).to.deep.include({ payer: owner.address, amount: FEE.toString() });
    // The fee went to the treasury, exactly.
    expect(await s.usdc.balanceOf(s.treasury.address)).to.equal(treasuryBefore + FEE);
    expect(await s.usdc.balanceOf(owner.address)).to.equal(ownerBefore - FEE);

    await fundGas(owner, agent.address);
    const started = seen(await ownerClient.startAgent({ agentId: agent.id }));
    expect(started.state).to.equal("running");
    // Starting registered its key and chains: it is an executor on arc, with a card.
    const executors = (await s.call<{ executors: Array<{ address: string; supportedChains: string[] }> }>("GET", "/api/v1/a2a/executors?chain=arc"))
      .body.data.executors;
    expect(executors.find((e) => e.address === agent.address)?.supportedChains).to.deep.equal(["arc"]);
    const card = (await s.call<{ market: { address: string; hosted?: unknown } }>("GET", `/.well-known/agents/${agent.address}.json`))
      .body as unknown as { market: { address: string }; publicKey: string };
    expect(card.market.address).to.equal(agent.address);

    // The public listing: tools with header values masked, never a secret.
    const listing = seen(
      (await s.call<{ agents: Array<{ id: number; tools: unknown[]; builtinTools: string[] }> }>("GET", "/api/v1/agents")).body.data,
    );
    const listed = listing.agents.find((a) => a.id === agent.id)!;
    expect(listed.tools).to.deep.equal([
      {
        type: "http",
        name: "lookup",
        description: "Look up a fact about a topic.",
        method: "GET",
        url: `${model.origin}/tools/lookup`,
        headers: { Authorization: "Bearer ****" },
      },
    ]);
    expect(listed.builtinTools).to.deep.equal(["send_message", "read_inbox", "wait_for_reply"]);

    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const before = { agent: await s.usdc.balanceOf(agent.address), treasury: await s.usdc.balanceOf(s.treasury.address) };
    const posted = await poster.postTasks([
      { instructions: "Summarise the public history of the Suez canal.", amountRaw: 3_000_000n, privacy: "public", capabilities: ["summarization"] },
      { instructions: "Summarise the private board minutes: revenue rose 4%.", amountRaw: 5_000_001n, capabilities: ["summarization"] },
    ]);
    expect(posted.posted).to.equal(2);
    const [publicTask, privateTask] = posted.results.map((r) => r.taskHash!);
    await until(
      async () =>
        (await statusOf(s, posterKey, publicTask!)).status === "verified" && (await statusOf(s, posterKey, privateTask!)).status === "verified",
      60_000,
      "both tasks verified",
    );

    // Paid on chain, exactly: fee 10% rounded down (kept in the escrow until the treasury sweeps it).
    expect(await sweepFeesToTreasury(s)).to.equal(300_000n + 500_000n);
    expect(await s.usdc.balanceOf(agent.address)).to.equal(before.agent + 2_700_000n + 4_500_001n);
    expect(await s.usdc.balanceOf(s.treasury.address)).to.equal(before.treasury + 300_000n + 500_000n);
    for (const taskHash of [publicTask!, privateTask!]) expect(await deliveriesOf(s, taskHash)).to.have.length(1);
    expect((await statusOf(s, posterKey, publicTask!)).output).to.match(/^Summary: the Suez canal opened in 1869/);
    expect((await statusOf(s, posterKey, privateTask!)).output).to.match(/revenue up four percent/);

    // The built-in tool reached the poster.
    const messages = (
      await s.call<{ messages: Array<{ sender: string; body: string }> }>("GET", `/api/v1/a2a/tasks/${privateTask}/messages`, { key: posterKey })
    ).body.data.messages;
    expect(messages).to.deep.equal([{ ...messages[0], sender: agent.address, body: "Working on your board minutes now." }]);
    // The HTTP tool got the secret as its bearer token; what the model saw of its answer was redacted.
    expect(model.toolRequests.map((r) => r.headers.authorization)).to.deep.equal([`Bearer ${TOOL_SECRET}`]);
    expect(model.toolRequests[0]!.path).to.equal("/tools/lookup?topic=suez+canal");
    const toolResults = model.requests.flatMap((r) => r.messages.filter((m) => m.role === "tool").map((m) => m.content ?? ""));
    expect(toolResults.some((t) => t.includes("opened 1869") && t.includes("Bearer [redacted]"))).to.equal(true);
    // The model key reached the model (as its bearer token) and nothing else.
    expect(new Set(model.requests.map((r) => r.headers.authorization))).to.deep.equal(new Set([`Bearer ${MODEL_KEY}`]));
    // Runs are recorded.
    const runs = () => s.db.selectFrom("hosted_task_runs").select("status").where("agent_id", "=", agent.id).execute();
    await until(async () => (await runs()).every((r) => r.status === "delivered"), 10_000, "runs recorded as delivered");
    expect(await runs()).to.have.length(2);

    // Stop, then withdraw everything to the owner's address.
    expect(seen(await ownerClient.stopAgent({ agentId: agent.id })).state).to.equal("stopped");
    // Its start and its stop are events of its owner's (issue 27), never anyone else's.
    const agentEvents = (
      await s.call<{ events: MarketEvent[] }>("GET", "/api/v1/events?types=agent.started,agent.stopped&limit=500", {
        key: ownerApiKey,
      })
    ).body.data.events.filter((e) => e.data.agentId === agent.id);
    expect(agentEvents.map((e) => [e.type, e.data.cause ?? null, e.public])).to.deep.equal([
      ["agent.started", null, false],
      ["agent.stopped", "stopped", false],
    ]);
    expect(String(agentEvents[0]!.data.address).toLowerCase()).to.equal(agent.address.toLowerCase());
    const forStranger = (
      await s.call<{ events: MarketEvent[] }>("GET", "/api/v1/events?types=agent.started,agent.stopped&limit=500", { key: posterKey })
    ).body.data.events;
    expect(forStranger.filter((e) => e.data.agentId === agent.id)).to.deep.equal([]);
    const held = await s.usdc.balanceOf(agent.address);
    const ownerBeforeWithdraw = await s.usdc.balanceOf(owner.address);
    const withdrawal = seen(await ownerClient.withdrawFromAgent({ agentId: agent.id }));
    expect(withdrawal).to.deep.include({ from: agent.address, to: owner.address, amount: held.toString(), chain: "arc", token: s.token });
    expect(await s.usdc.balanceOf(agent.address)).to.equal(0n);
    expect(await s.usdc.balanceOf(owner.address)).to.equal(ownerBeforeWithdraw + 7_200_001n);

    // The exported key opens with the owner's private key (here and with eciesjs) to the wallet that was paid.
    const exported = seen(await ownerClient.exportAgentKey({ agentId: agent.id }));
    expect(exported.exports).to.equal(1);
    expect(exported.ownerPublicKey).to.equal(publicKeyFromPrivateKey(ownerKey));
    expect(new Wallet(exported.privateKey!).address).to.equal(agent.address);
    expect(new Wallet(decryptExportedKey(exported.encryptedPrivateKey, ownerKey)).address).to.equal(agent.address);
    const viaEcies = Buffer.from(eciesDecrypt(ownerKey.slice(2), Buffer.from(exported.encryptedPrivateKey, "hex"))).toString("utf8");
    expect(new Wallet(viaEcies).address).to.equal(agent.address);
    const recorded = await s.db.selectFrom("key_exports").selectAll().where("agent_id", "=", agent.id).execute();
    expect(recorded).to.have.length(1);
    expect((await s.db.selectFrom("hosted_agents").select("exported_at").where("id", "=", agent.id).executeTakeFirstOrThrow()).exported_at).to.be.a(
      "number",
    );

    // No secret anywhere: logs, answers, prompts, results.
    const walletKey = exported.privateKey!;
    const secrets = [MODEL_KEY, TOOL_SECRET, walletKey, walletKey.slice(2)];
    expect(logLines.length).to.be.greaterThan(10);
    expect(logLines.some((l) => l.includes("hosted agent started"))).to.equal(true);
    const everything = {
      logs: logLines.join("\n"),
      answers: JSON.stringify(answers.map((a) => (a === exported ? { ...exported, privateKey: undefined } : a))),
      prompts: JSON.stringify(model.requests.map((r) => ({ messages: r.messages, tools: r.tools }))),
      results: JSON.stringify(await s.db.selectFrom("deliveries").select("output").execute()),
      stored: JSON.stringify(await s.db.selectFrom("hosted_agent_secrets").selectAll().execute()),
    };
    for (const [where, text] of Object.entries(everything)) {
      for (const secret of secrets) expect(text.includes(secret), `${where} holds a secret`).to.equal(false);
    }
  });
});

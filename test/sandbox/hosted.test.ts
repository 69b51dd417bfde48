/**
 * JS Eval and Sandbox tools of hosted agents (issue 26): a hosted agent on the scripted model server calls both during a
 * paid task and their results reach the delivered output; the per-agent caps refuse with their codes and reset as
 * stated, in the database (a second sandbox service on the same database, as another API process, agrees); a server
 * without a working sandbox refuses the tools at deploy (shown in /health) and never runs them weaker; the public
 * view of an agent never shows a sandbox tool's code. With skills (issue 25): a skill never holds them
 * (SANDBOX_TOOL_IN_SKILL), and an owner's update adds them by the deploy's rules (bounds, sandbox required).
 */
import { expect } from "chai";
import type { Stack } from "../support/stack";
import type { ModelRequest, ModelServer } from "../support/model-server";
import { privateKeyOf, startTestServer, type TestServer } from "../server/harness";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { DEFAULT_SANDBOX } from "../../server/config";
import { createSandbox } from "../../server/sandbox";
import { callSandboxTool } from "../../server/hosted/runner/sandbox-tools";
import { MarketError } from "@market/core/errors";
import type { JsEvalTool, SandboxTool } from "@market/core/api";
import { agentOptions, keyedClientOf, startedAgent, statusOf, until, sharedStackAndModel } from "../hosted/helpers";

const toolResults = (request: ModelRequest) => request.messages.filter((m) => m.role === "tool").map((m) => m.content ?? "");
const DAY_MS = 86_400_000;

const wordCount: JsEvalTool = {
  type: "js_eval",
  name: "word_count",
  description: "Counts the words of a text.",
  code: "const words = input.text.trim().split(/\\s+/); return { words: words.length, longest: words.reduce((a, b) => (b.length > a.length ? b : a)) };",
  parameters: { type: "object", properties: { text: { type: "string", description: "The text." } }, required: ["text"] },
  timeoutSeconds: 10,
};
const reverse: SandboxTool = {
  type: "sandbox",
  name: "reverse_lines",
  description: "Reverses the order of the lines of its input.",
  setupCommand: "printf 'ready' > /tmp/state",
  command: "printf '%s\\n' {input} | tac; cat /tmp/state",
  timeoutSeconds: 10,
};

describe("sandbox tools of hosted agents", function () {
  this.timeout(180_000);

  describe("in a paid task", function () {
    let s: Stack;
    let model: ModelServer;
    sharedStackAndModel((stack, server) => ((s = stack), (model = server)));

    it("calls a JS Eval tool and a Sandbox tool, and their results reach the delivered output", async function () {
      model.setScript((request) => {
        const results = toolResults(request);
        if (results.length === 0) return { toolCalls: [{ name: "word_count", arguments: { text: "the quick brown fox; rm -rf / $(id)" } }] };
        if (results.length === 1) return { toolCalls: [{ name: "reverse_lines", arguments: { input: "first line; echo $(id)\nsecond `line`" } }] };
        return { content: `Counted ${results[0]} and reversed: ${results[1]!.replace(/\n/g, " / ")}` };
      });
      const owner = s.stranger;
      const { client: ownerClient, agent } = await startedAgent(s, owner, agentOptions(model, { tools: [wordCount, reverse] }));
      // The public sees the tools' names and types, never their code or command.
      const seen = await s.call<{ agent: { tools: Array<Record<string, unknown>> } }>("GET", `/api/v1/agents/${agent.id}`);
      expect(seen.body.data.agent.tools).to.deep.equal([
        { type: "sandbox", name: "reverse_lines", description: reverse.description, method: "", url: "", headers: {} },
        { type: "js_eval", name: "word_count", description: wordCount.description, method: "", url: "", headers: {} },
      ]);
      expect(JSON.stringify(seen.body)).to.not.include("tac");
      void ownerClient;

      const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
      const { taskHash } = await poster.postTask({
        instructions: "Count the words and reverse the lines.",
        amountRaw: 1_000_000n,
        privacy: "public",
        capabilities: ["summarization"],
        targetExecutor: agent.address,
      });
      await until(async () => (await statusOf(s, posterKey, taskHash!)).status === "verified", 60_000, "the task verified");
      expect((await statusOf(s, posterKey, taskHash!)).output).to.equal(
        'Counted {"words":8,"longest":"quick"} and reversed: exit 0 / second `line` / first line; echo $(id) / ready',
      );
      // The model was told of both tools with their inputs.
      const told = model.requests[0]!.tools!.map((t) => t.function);
      expect(told.find((t) => t.name === "word_count")!.parameters).to.deep.include({ required: ["text"] });
      expect(told.find((t) => t.name === "reverse_lines")!.parameters).to.deep.include({ required: ["input"] });
      // The runs were counted against the agent's daily cap.
      expect((await s.hosting.sandbox.caps.today(agent.id)).runs).to.equal(2);
    });
  });

  describe("caps per agent", function () {
    let s: TestServer;
    // A default group's CPU weight rather than the idle group: at the default a run may start late on a busy shared
    // machine and use up the 1 s daily cap before the runs the rate counts (test/sandbox/priority.test.ts tests the
    // default's yielding).
    const config = { ...DEFAULT_SANDBOX, runsPerMinute: 2, dailySeconds: 1, cpuWeight: 100, cpuIdle: false };
    const quick: SandboxTool = { type: "sandbox", name: "quick", description: "d", command: "echo {input}", timeoutSeconds: 5 };
    const slow: SandboxTool = { type: "sandbox", name: "slow", description: "d", command: "sleep 3; echo done", timeoutSeconds: 5 };
    const signal = new AbortController().signal;
    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => "ran",
        (e: unknown) => (e instanceof MarketError ? e.code : String(e)),
      );

    beforeEach(async function () {
      s = await startTestServer({ hosted: { sandbox: config } });
    });
    afterEach(async function () {
      await s.close();
    });

    it("the per-minute run rate refuses with SANDBOX_RATE_LIMITED, in the database, and resets 60 s after the first run", async function () {
      const sandbox = s.hosting.sandbox;
      expect(await sandbox.runCommand(7, quick, "one", signal)).to.equal("exit 0\none\n");
      // Another API process on the same database counts the same window.
      const replica = createSandbox({ db: s.db, config, now: () => Date.now() });
      expect(await replica.runCommand(7, quick, "two", signal)).to.equal("exit 0\ntwo\n");
      expect(await codeOf(sandbox.runCommand(7, quick, "three", signal))).to.equal("SANDBOX_RATE_LIMITED");
      // The model sees the code.
      expect(await callSandboxTool(sandbox, 7, quick, { input: "x" }, signal)).to.match(
        /^Error: SANDBOX_RATE_LIMITED: The agent may start 2 sandbox runs a minute/,
      );
      // Another agent has its own window.
      expect(await sandbox.runCommand(8, quick, "other", signal)).to.equal("exit 0\nother\n");
      s.advanceClock(60_000);
      expect(await sandbox.runCommand(7, quick, "again", signal)).to.equal("exit 0\nagain\n");
    });

    it("the daily cost cap (wall-clock seconds) cuts the last run to what is left, refuses with SANDBOX_DAILY_CAP, and resets at 00:00 UTC", async function () {
      const sandbox = s.hosting.sandbox;
      // 1 s left today: the 5 s tool is stopped after 1 s.
      expect(await sandbox.runCommand(9, slow, "", signal)).to.equal("stopped (the run was stopped after its 1 s timeout)\n");
      const used = await sandbox.caps.today(9);
      expect(used.runs).to.equal(1);
      expect(used.wallMs).to.be.within(1_000, 3_000);
      expect(await codeOf(sandbox.runCommand(9, quick, "x", signal))).to.equal("SANDBOX_DAILY_CAP");
      expect(await callSandboxTool(sandbox, 9, quick, { input: "x" }, signal)).to.match(
        /^Error: SANDBOX_DAILY_CAP: The agent used its 1 sandbox seconds of today/,
      );
      // The sum is in the database: a restarted process reads it.
      const restarted = createSandbox({ db: s.db, config, now: () => Date.now() });
      expect(await codeOf(restarted.runCommand(9, quick, "x", signal))).to.equal("SANDBOX_DAILY_CAP");
      s.advanceClock(DAY_MS - (Date.now() % DAY_MS) + 1_000);
      expect(await sandbox.runCommand(9, quick, "tomorrow", signal)).to.equal("exit 0\ntomorrow\n");
    });
  });

  describe("where the tools are allowed", function () {
    it("a server without a working sandbox refuses them at deploy (SANDBOX_UNAVAILABLE, shown in /health) and never runs them", async function () {
      const s = await startTestServer({ hosted: { sandbox: { ...DEFAULT_SANDBOX, bwrap: "/nonexistent/bwrap" } } });
      try {
        const health = await s.call<{ sandbox: { available: boolean; reason: string } }>("GET", "/health");
        expect(health.body.data.sandbox.available).to.equal(false);
        expect(health.body.data.sandbox.reason).to.match(/^bwrap did not run sh: .*\/nonexistent\/bwrap: No such file or directory/);
        const key = await s.apiKeyFor(s.stranger);
        const refused = await s.call("POST", "/api/v1/agents", {
          key,
          body: {
            displayName: "Sandboxed",
            instructions: "Answer.",
            model: { baseUrl: "http://127.0.0.1:9/v1", name: "m" },
            ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(s.stranger)),
            tools: [wordCount],
          },
        });
        expect(refused.status).to.equal(503);
        expect(refused.body.error.code).to.equal("SANDBOX_UNAVAILABLE");
        expect(await s.db.selectFrom("hosted_agents").select("id").execute()).to.deep.equal([]);
        // An agent deployed without them is unaffected; a run asked for anyway is refused, not run weaker.
        await s.deployHostedAgent(s.stranger, key);
        const answer = await callSandboxTool(s.hosting.sandbox, 1, reverse, { input: "x" }, new AbortController().signal);
        expect(answer).to.match(/^Error: SANDBOX_UNAVAILABLE: No working sandbox on this server: bwrap did not run sh/);
      } finally {
        await s.close();
      }
    });

    it("a skill never holds one (SANDBOX_TOOL_IN_SKILL over the skills route, nothing stored)", async function () {
      const s = await startTestServer();
      try {
        const key = await s.apiKeyFor(s.stranger);
        const before = await s.db.selectFrom("skills").select("id").execute();
        for (const tool of [wordCount, reverse]) {
          const refused = await s.call("POST", "/api/v1/skills", {
            key,
            body: { slug: "sandboxed", name: "Sandboxed", instructions: "x", tools: [tool] },
          });
          expect(refused.status).to.equal(400);
          expect(refused.body.error.code).to.equal("SANDBOX_TOOL_IN_SKILL");
          expect(refused.body.error.details?.[0]).to.deep.include({ field: "body.tools.0.type" });
        }
        expect(await s.db.selectFrom("skills").select("id").execute()).to.deep.equal(before);
      } finally {
        await s.close();
      }
    });

    it("an owner's update (PATCH) adds them by the deploy's rules; the deploy's bounds and URL rules hold there too", async function () {
      const s = await startTestServer();
      try {
        const key = await s.apiKeyFor(s.stranger);
        const strangerKey = await s.apiKeyFor(s.poster);
        const { id } = await s.deployHostedAgent(s.stranger, key);
        const patch = (k: string, tools: unknown[]) =>
          s.call<{ agent: { tools: unknown[] } }>("PATCH", `/api/v1/agents/${id}`, { key: k, body: { tools } });
        const wrong = await patch(strangerKey, [wordCount]);
        expect(wrong.body.error.code).to.equal("NOT_AGENT_OWNER");
        const tooMany = await patch(
          key,
          Array.from({ length: 21 }, (_, i) => ({ ...wordCount, name: `count_${i}` })),
        );
        expect(tooMany.body.error.code).to.equal("TOO_MANY_TOOLS");
        const quoted = await patch(key, [{ ...reverse, command: "echo '{input}'" }]);
        expect(quoted.body.error).to.deep.include({ code: "VALIDATION_FAILED" });
        expect(quoted.body.error.details?.[0]).to.deep.include({ field: "body.tools.0.command" });
        // An MCP server's URL takes no placeholder (issue 23: the origin is fixed when the tool is accepted).
        const mcp = await patch(key, [{ type: "mcp", name: "remote", url: "https://{host}.example.com/mcp" }]);
        expect(mcp.body.error).to.deep.include({ code: "VALIDATION_FAILED" });
        expect(mcp.body.error.details?.[0]).to.deep.include({ field: "body.tools.0.url" });
        expect(await s.db.selectFrom("hosted_agent_tools").select("name").where("agent_id", "=", id).execute()).to.deep.equal([]);

        const updated = await patch(key, [wordCount, reverse]);
        expect(updated.status).to.equal(200);
        expect(updated.body.data.agent.tools).to.deep.equal([
          { type: "sandbox", name: "reverse_lines", description: reverse.description, method: "", url: "", headers: {} },
          { type: "js_eval", name: "word_count", description: wordCount.description, method: "", url: "", headers: {} },
        ]);
        const stored = await s.db
          .selectFrom("hosted_agent_tools")
          .select(["name", "definition"])
          .where("agent_id", "=", id)
          .orderBy("name")
          .execute();
        expect(stored.map((r) => JSON.parse(r.definition) as unknown)).to.deep.equal([reverse, wordCount]);
      } finally {
        await s.close();
      }
    });

    it("a server without a working sandbox refuses them in an update too (SANDBOX_UNAVAILABLE, nothing changed)", async function () {
      const s = await startTestServer({ hosted: { sandbox: { ...DEFAULT_SANDBOX, bwrap: "/nonexistent/bwrap" } } });
      try {
        const key = await s.apiKeyFor(s.stranger);
        const { id } = await s.deployHostedAgent(s.stranger, key);
        const refused = await s.call("PATCH", `/api/v1/agents/${id}`, { key, body: { instructions: "Changed.", tools: [wordCount] } });
        expect(refused.status).to.equal(503);
        expect(refused.body.error.code).to.equal("SANDBOX_UNAVAILABLE");
        expect(await s.db.selectFrom("hosted_agent_tools").select("name").where("agent_id", "=", id).execute()).to.deep.equal([]);
        const row = await s.db.selectFrom("hosted_agents").select("instructions").where("id", "=", id).executeTakeFirstOrThrow();
        expect(row.instructions).to.equal("Answer briefly.");
      } finally {
        await s.close();
      }
    });

    it("refuses a command whose {input} sits inside single quotes, and unknown tool types", async function () {
      const s = await startTestServer();
      try {
        const key = await s.apiKeyFor(s.stranger);
        const deploy = (tools: unknown[]) =>
          s.call("POST", "/api/v1/agents", {
            key,
            body: {
              displayName: "Sandboxed",
              instructions: "Answer.",
              model: { baseUrl: "http://127.0.0.1:9/v1", name: "m" },
              ownerPublicKey: publicKeyFromPrivateKey(privateKeyOf(s.stranger)),
              tools,
            },
          });
        const quoted = await deploy([{ ...reverse, command: "echo '{input}'" }]);
        expect(quoted.status).to.equal(400);
        expect(quoted.body.error).to.deep.include({ code: "VALIDATION_FAILED" });
        expect(quoted.body.error.details?.[0]).to.deep.include({ field: "body.tools.0.command" });
        const tooLong = await deploy([{ ...wordCount, timeoutSeconds: 601 }]);
        expect(tooLong.body.error.code).to.equal("VALIDATION_FAILED");
        const unknown = await deploy([{ ...wordCount, type: "python" }]);
        expect(unknown.body.error.code).to.equal("VALIDATION_FAILED");
      } finally {
        await s.close();
      }
    });
  });
});

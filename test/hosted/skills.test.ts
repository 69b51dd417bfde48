/**
 * Skills: the registry (create, list, search, get, edit, delete, each refusal with its code and nothing half-stored),
 * SKILL.md import, and installs: by slug at deploy (a private skill of another author is SKILL_NOT_FOUND), after
 * deploy by the owner (SKILL_NEEDS_SECRETS, SKILL_ALREADY_INSTALLED), frozen snapshots joined at the next start
 * (instructions appended, a clashing tool renamed `<slug>__<name>`, tags joined), and an edit changing nothing until
 * the skill is removed and installed again.
 */
import { expect } from "chai";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, type ModelRequest, type ModelServer } from "../support/model-server";
import { expectError, expectOk } from "../server/expect";
import type { RunningConfig } from "../../server/hosted/store";
import { json } from "../../server/db";
import { agentOptions, clientOf, fundGas, keyedClientOf, statusOf, until } from "./helpers";

const toolResults = (request: ModelRequest) => request.messages.filter((m) => m.role === "tool").map((m) => m.content ?? "");

const SKILL_MD = `---
name: Research Helper
description: Looks facts up before summarising.
version: 2.1.0
license: MIT
metadata:
  internal: ignored
---
# Research first

Before you summarise, look the topic up with the lookup tool and cite what it says.
`;

describe("skills", function () {
  this.timeout(180_000);
  let s: Stack;
  let model: ModelServer;
  let author: string;
  let other: string;

  before(async function () {
    s = await startStack();
    model = await startModelServer();
    author = (await keyedClientOf(s, s.stranger)).key;
    other = (await keyedClientOf(s, s.worker)).key;
  });
  after(async function () {
    await s.close();
    await model.close();
  });

  const lookup = (url: string, name = "lookup") => ({
    type: "http",
    name,
    description: "Look a topic up.",
    parameters: { type: "object", properties: { topic: { type: "string", description: "The topic." } }, required: ["topic"] },
    method: "GET",
    url,
    paramMapping: { topic: "query" },
  });
  const skillCount = async () => (await s.db.selectFrom("skills").select("id").execute()).length;
  const create = (key: string, body: Record<string, unknown>) => s.call<{ skill: Record<string, unknown> }>("POST", "/api/v1/skills", { key, body });

  it("creates, lists, searches, edits and deletes skills; private ones exist for their author only; every refusal has its code", async function () {
    const made = expectOk(
      await create(author, {
        slug: "tidy-prose",
        name: "Tidy prose",
        description: "Cleans up wording.",
        instructions: "Prefer short sentences.",
        capabilities: ["editing"],
        isPublic: true,
      }),
    ).skill;
    expect(made).to.deep.include({ slug: "tidy-prose", version: "1.0.0", isPublic: true, installs: 0, capabilities: ["editing"], secretRefs: [] });
    expectOk(await create(author, { slug: "secret-sauce", name: "Secret sauce", instructions: "Private know-how." }));

    // The registry: public skills only, by tag and by text.
    const listed = expectOk(await s.call<{ skills: Array<{ slug: string }>; total: number }>("GET", "/api/v1/skills"));
    expect(listed.skills.map((k) => k.slug))
      .to.include("tidy-prose")
      .and.not.include("secret-sauce");
    expect(expectOk(await s.call<{ total: number }>("GET", "/api/v1/skills?tag=editing")).total).to.equal(1);
    expect(expectOk(await s.call<{ total: number }>("GET", "/api/v1/skills?tag=cooking")).total).to.equal(0);
    // A blank tag (a space, a no-break space) filters nothing; a malformed one is refused (the fuzzer's 500 before).
    const all = expectOk(await s.call<{ total: number }>("GET", "/api/v1/skills")).total;
    expect(expectOk(await s.call<{ total: number }>("GET", "/api/v1/skills?tag=%C2%A0")).total).to.equal(all);
    expect(expectOk(await s.call<{ total: number }>("GET", "/api/v1/skills?tag=%20")).total).to.equal(all);
    expectError(await s.call("GET", "/api/v1/skills?tag=a%2Cb"), "VALIDATION_FAILED");
    expect(expectOk(await s.call<{ total: number }>("GET", "/api/v1/skills?q=WORDING")).total).to.equal(1);
    // A private skill: its author sees it, anyone else gets SKILL_NOT_FOUND (for reading, editing and deleting).
    expectOk(await s.call("GET", "/api/v1/skills/secret-sauce", { key: author }));
    expectError(await s.call("GET", "/api/v1/skills/secret-sauce", { key: other }), "SKILL_NOT_FOUND");
    expectError(await s.call("GET", "/api/v1/skills/secret-sauce"), "SKILL_NOT_FOUND");
    expectError(await s.call("PATCH", "/api/v1/skills/secret-sauce", { key: other, body: { name: "Mine" } }), "SKILL_NOT_FOUND");
    // A public skill: the author alone changes it.
    expectError(await s.call("PATCH", "/api/v1/skills/tidy-prose", { key: other, body: { name: "Mine" } }), "NOT_SKILL_AUTHOR");
    expectError(await s.call("DELETE", "/api/v1/skills/tidy-prose", { key: other }), "NOT_SKILL_AUTHOR");
    expectError(await s.call("PATCH", "/api/v1/skills/tidy-prose", { body: { name: "Mine" } }), "AUTH_REQUIRED");

    // Refusals: each its code, nothing stored.
    const before = await skillCount();
    const base = { slug: "refused", name: "Refused", instructions: "x" };
    expectError(await create(other, { ...base, slug: "tidy-prose" }), "SKILL_SLUG_TAKEN");
    expectError(await create(author, { ...base, instructions: "é".repeat(8 * 1024 + 1) }), "SKILL_INSTRUCTIONS_TOO_LONG");
    const tools21 = Array.from({ length: 21 }, (_, i) => lookup("https://example.com/lookup", `t${i}`));
    expectError(await create(author, { ...base, tools: tools21 }), "SKILL_TOO_MANY_TOOLS");
    expectError(await create(author, { ...base, capabilities: Array.from({ length: 11 }, (_, i) => `tag${i}`) }), "SKILL_TOO_MANY_CAPABILITIES");
    expectError(await create(author, { ...base, tools: [lookup("https://example.com/l", "n".repeat(65))] }), "TOOL_NAME_TOO_LONG");
    for (const type of ["js_eval", "sandbox"]) {
      const answer = await create(author, { ...base, tools: [{ type, name: "run", code: "return input" }] });
      expectError(answer, "SANDBOX_TOOL_IN_SKILL");
    }
    expectError(await create(author, { ...base, tools: [lookup("https://example.com/l"), lookup("https://example.com/l")] }), "VALIDATION_FAILED");
    expect(await skillCount()).to.equal(before);

    // Edits by the author; a refused edit changes nothing.
    expectOk(await s.call("PATCH", "/api/v1/skills/tidy-prose", { key: author, body: { instructions: "Prefer very short sentences." } }));
    expectError(
      await s.call("PATCH", "/api/v1/skills/tidy-prose", { key: author, body: { capabilities: Array.from({ length: 11 }, (_, i) => `t${i}`) } }),
      "SKILL_TOO_MANY_CAPABILITIES",
    );
    const edited = expectOk(await s.call<{ skill: { instructions: string; capabilities: string[] } }>("GET", "/api/v1/skills/tidy-prose")).skill;
    expect(edited).to.deep.include({ instructions: "Prefer very short sentences.", capabilities: ["editing"] });

    // Deleted: gone from the registry and from reads; its slug stays taken.
    expectOk(await s.call("DELETE", "/api/v1/skills/tidy-prose", { key: author }));
    expectError(await s.call("GET", "/api/v1/skills/tidy-prose"), "SKILL_NOT_FOUND");
    expectError(await create(author, { ...base, slug: "tidy-prose" }), "SKILL_SLUG_TAKEN");
  });

  it("imports a SKILL.md file (frontmatter and body), refusing malformed ones with a code each and storing nothing", async function () {
    const imported = expectOk(
      await s.call<{ skill: Record<string, unknown> }>("POST", "/api/v1/skills/import", { key: author, body: { text: SKILL_MD, isPublic: true } }),
    ).skill;
    expect(imported).to.deep.include({
      slug: "research-helper",
      name: "Research Helper",
      description: "Looks facts up before summarising.",
      version: "2.1.0",
      license: "MIT",
      instructions: "# Research first\n\nBefore you summarise, look the topic up with the lookup tool and cite what it says.",
    });
    const before = await skillCount();
    const refusals: Array<[string, string]> = [
      ["no frontmatter at all", "SKILL_FILE_MALFORMED"],
      ["---\nname: Unclosed\nbody", "SKILL_FILE_MALFORMED"],
      ["---\nname: [a, list]\n---\nBody", "SKILL_FILE_MALFORMED"],
      ["---\nname Missing colon\n---\nBody", "SKILL_FILE_MALFORMED"],
      ["---\ndescription: no name\n---\nBody", "SKILL_NAME_MISSING"],
      ["---\nname: Empty body\n---\n\n", "SKILL_FILE_MALFORMED"],
      [`---\nname: Huge\n---\n${"x".repeat(16 * 1024 + 1)}`, "SKILL_INSTRUCTIONS_TOO_LONG"],
      [`---\nname: Huger\n---\n${"x".repeat(64 * 1024)}`, "SKILL_FILE_MALFORMED"],
    ];
    for (const [text, code] of refusals)
      expectError(
        await s.call("POST", "/api/v1/skills/import", { key: author, body: { text, slug: "imported-refusal" } }),
        code as "SKILL_FILE_MALFORMED",
      );
    expect(await skillCount()).to.equal(before);
  });

  it("installs skills at deploy and after it as frozen snapshots joined at the next start; refusals by code", async function () {
    const toolUrl = `${model.origin}/tools/lookup`;
    // The author's public skill (from the SKILL.md above, given a tool and a tag) and a private one.
    expectOk(
      await s.call("PATCH", "/api/v1/skills/research-helper", { key: author, body: { tools: [lookup(toolUrl)], capabilities: ["research"] } }),
    );
    expectOk(await create(author, { slug: "author-only", name: "Author only", instructions: "Mine." }));
    expectOk(
      await create(other, { slug: "needs-key", name: "Needs a key", instructions: "Uses a keyed API.", secretRefs: ["weather_key"], isPublic: true }),
    );

    const owner = await clientOf(s, s.worker);
    // A private skill of another author at deploy: SKILL_NOT_FOUND, and no agent made.
    const agents = async () => (await s.db.selectFrom("hosted_agents").select("id").execute()).length;
    const count = await agents();
    const refused = await owner.deployAgent(agentOptions(model, { skills: ["author-only"] })).catch((e: { code: string }) => e.code);
    expect(refused).to.equal("SKILL_NOT_FOUND");
    expect(await agents()).to.equal(count);

    // Deployed with the public skill; the agent has its own `lookup` too, so the skill's becomes research_helper__lookup.
    const { agent } = await owner.deployAgent(
      agentOptions(model, {
        model: { baseUrl: model.baseUrl, name: "skilled" },
        tools: [lookup(`${model.origin}/tools/own`) as never],
        skills: ["research-helper"],
      }),
    );
    expect(agent.skills.map((k) => [k.slug, k.version, k.tools])).to.deep.equal([["research-helper", "2.1.0", ["lookup"]]]);
    expect(expectOk(await s.call<{ skill: { installs: number } }>("GET", "/api/v1/skills/research-helper")).skill.installs).to.equal(1);
    await fundGas(s.worker, agent.address);

    // Installing after deploy: refusals by code.
    const install = (slug: string, key = other) => s.call("POST", `/api/v1/agents/${agent.id}/skills`, { key, body: { slug } });
    expectError(await install("research-helper"), "SKILL_ALREADY_INSTALLED");
    expectError(await install("needs-key"), "SKILL_NEEDS_SECRETS");
    expectError(await install("author-only"), "SKILL_NOT_FOUND");
    expectError(await install("tidy-prose"), "SKILL_NOT_FOUND");
    expectError(await install("needs-key", author), "NOT_AGENT_OWNER");
    expectError(await s.call("DELETE", `/api/v1/agents/${agent.id}/skills/needs-key`, { key: other }), "SKILL_NOT_INSTALLED");
    expect(await s.db.selectFrom("hosted_agent_skills").select("slug").where("agent_id", "=", agent.id).execute()).to.deep.equal([
      { slug: "research-helper" },
    ]);

    // Started: instructions appended, tools joined (the clash renamed), tags joined.
    await owner.startAgent({ agentId: agent.id });
    const running = async () =>
      json.read<RunningConfig>(
        (await s.db.selectFrom("hosted_agents").select("running_config").where("id", "=", agent.id).executeTakeFirstOrThrow()).running_config,
      )!;
    const first = await running();
    expect(first.instructions).to.match(
      /^Summarise what you are given in two sentences\.\n\n## Skill: Research Helper \(research-helper 2\.1\.0\)\n\n# Research first/,
    );
    expect(first.tools.map((t) => t.name)).to.deep.equal(["lookup", "research_helper__lookup"]);
    expect(first.capabilities).to.deep.equal(["summarization", "research"]);
    const registered = await s.db.selectFrom("agent_capabilities").select("tag").where("agent_address", "=", agent.address).execute();
    expect(registered.map((r) => r.tag).sort()).to.deep.equal(["research", "summarization"]);

    // A paid task: the model sees the joined instructions and both tools, and calls the skill's.
    model.setTool((request) => ({ body: JSON.stringify({ path: request.path, fact: "Lisbon is the capital of Portugal." }) }));
    model.setScript((request) => {
      if (request.model !== "skilled") return { content: "wrong model" };
      const results = toolResults(request);
      if (results.length === 0) return { toolCalls: [{ name: "research_helper__lookup", arguments: { topic: "Lisbon" } }] };
      return { content: `Summary with research: ${results[0]}` };
    });
    const { client: poster, key: posterKey } = await keyedClientOf(s, s.poster);
    const { taskHash } = await poster.postTask({
      instructions: "Summarise what Lisbon is.",
      amountRaw: 1_000_000n,
      privacy: "public",
      capabilities: ["research"],
      targetExecutor: agent.address,
    });
    await until(async () => (await statusOf(s, posterKey, taskHash!)).status === "verified", 60_000, "the task verified");
    expect((await statusOf(s, posterKey, taskHash!)).output).to.include("/tools/lookup?topic=Lisbon");
    const seen = model.requests.filter((r) => r.model === "skilled")[0]!;
    expect(seen.messages[0]!.content).to.include("Before you summarise, look the topic up");
    expect(seen.tools!.map((t) => t.function.name)).to.include.members(["lookup", "research_helper__lookup"]);

    // An edit of the skill changes nothing for the agent, even after a restart; a reinstall takes the new version.
    expectOk(
      await s.call("PATCH", "/api/v1/skills/research-helper", {
        key: author,
        body: { instructions: "Edited: never look anything up.", version: "3.0.0", capabilities: ["research", "travel"] },
      }),
    );
    await owner.restartAgent({ agentId: agent.id });
    expect((await running()).instructions)
      .to.include("Before you summarise")
      .and.not.include("Edited");
    expectOk(await s.call("DELETE", `/api/v1/agents/${agent.id}/skills/research-helper`, { key: other }));
    // Removal applies at the next start only: the running agent keeps what it started with.
    expect((await running()).tools.map((t) => t.name)).to.deep.equal(["lookup", "research_helper__lookup"]);
    expectOk(await install("research-helper"));
    await owner.restartAgent({ agentId: agent.id });
    const after = await running();
    expect(after.instructions).to.include("Edited: never look anything up.").and.not.include("Before you summarise");
    expect(after.capabilities).to.deep.equal(["summarization", "research", "travel"]);
    // The author deleting the skill leaves the installed snapshot in place.
    expectOk(await s.call("DELETE", "/api/v1/skills/research-helper", { key: author }));
    await owner.restartAgent({ agentId: agent.id });
    expect((await running()).instructions).to.include("Edited: never look anything up.");
    await owner.stopAgent({ agentId: agent.id });
  });
});

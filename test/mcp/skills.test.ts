/**
 * The skills registry as MCP tools (issue 25), with the official MCP SDK client on both surfaces: the remote /mcp
 * endpoint and `market mcp` over stdio. Listing and searching public skills, showing one (a private skill of another
 * author does not exist), installing into one's own hosted agent and removing it; every refusal as a tool error with
 * the API's `code`: another account's agent (NOT_AGENT_OWNER), a skill needing secrets (SKILL_NEEDS_SECRETS), a
 * private skill of another author (SKILL_NOT_FOUND), installed twice, not installed; nothing changed after any.
 */
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, taskDir } from "../support/cli";
import { httpMcp, stdioMcp, type Mcp } from "./helpers";
import { expectOk } from "../server/expect";

const seededStack = stackFixture(async (s) => {
  const authorKey = await s.apiKeyFor(s.poster);
  const ownerKey = await s.apiKeyFor(s.stranger);
  const otherKey = await s.apiKeyFor(s.worker);
  const create = async (body: Record<string, unknown>) => expectOk(await s.call("POST", "/api/v1/skills", { key: authorKey, body }));
  await create({
    slug: "alpine-guide",
    name: "Alpine guide",
    description: "Knows the mountains of the Alps.",
    instructions: "Answer with heights in metres.",
    capabilities: ["web_research"],
    isPublic: true,
  });
  await create({ slug: "river-notes", name: "River notes", instructions: "Rivers first.", capabilities: ["summarization"], isPublic: true });
  await create({ slug: "author-only", name: "Private notes", instructions: "Secret know-how.", isPublic: false });
  await create({
    slug: "keyed-lookup",
    name: "Keyed lookup",
    instructions: "Use the lookup tool.",
    isPublic: true,
    tools: [
      {
        name: "lookup",
        description: "Looks a word up.",
        parameters: { type: "object", properties: { word: { type: "string", description: "The word." } } },
        method: "GET",
        url: "https://dictionary.example/lookup",
        paramMapping: { word: "query" },
        auth: { type: "bearer", keyName: "Authorization", secretRef: "dictionary_key" },
      },
    ],
  });
  const agent = await s.deployHostedAgent(s.stranger, ownerKey);
  return { ownerKey, otherKey, agentId: agent.id };
});

describe("mcp: skills tools (list, show, install, remove) on /mcp and market mcp", function () {
  this.timeout(180_000);
  let s: Stack;
  let ownerKey: string;
  let otherKey: string;
  let agentId: number;
  const open: Mcp[] = [];

  before(ensureCliBuilt);
  beforeEach(async function () {
    ({
      stack: s,
      seeded: { ownerKey, otherKey, agentId },
    } = await seededStack());
  });
  afterEach(async function () {
    for (const mcp of open.splice(0)) await mcp.close();
    await s.close();
  });

  const installed = async () =>
    expectOk(await s.call<{ skills: Array<{ slug: string }> }>("GET", `/api/v1/agents/${agentId}/skills`, { key: ownerKey })).skills.map(
      (x) => x.slug,
    );

  /** The same checks through one surface: `owner` and `other` are MCP clients of the agent's owner and of another account. */
  async function exercise(owner: Mcp, other: Mcp) {
    const listed = await owner.call("list_skills", {});
    expect(listed.isError).to.equal(false);
    expect((listed.data.skills as Array<{ slug: string }>).map((x) => x.slug).sort()).to.deep.equal(["alpine-guide", "keyed-lookup", "river-notes"]);
    expect(listed.data.total).to.equal(3);
    const searched = await owner.call("list_skills", { q: "alps" });
    expect((searched.data.skills as Array<{ slug: string }>).map((x) => x.slug)).to.deep.equal(["alpine-guide"]);
    expect(searched.text).to.include("alpine-guide (Alpine guide 1.0.0)");
    const tagged = await owner.call("list_skills", { tag: "summarization" });
    expect((tagged.data.skills as Array<{ slug: string }>).map((x) => x.slug)).to.deep.equal(["river-notes"]);

    const shown = await owner.call("get_skill", { slug: "alpine-guide" });
    expect(shown.data.skill).to.deep.include({ slug: "alpine-guide", instructions: "Answer with heights in metres.", isPublic: true });
    // Another author's private skill does not exist for this caller; a malformed slug is refused before any call.
    expect((await owner.call("get_skill", { slug: "author-only" })).code).to.equal("SKILL_NOT_FOUND");
    expect((await owner.call("get_skill", { slug: "Not A Slug" })).code).to.equal("VALIDATION_FAILED");

    // Another account cannot install into (or remove from) the owner's agent.
    expect((await other.call("install_skill", { agentId, slug: "alpine-guide" })).code).to.equal("NOT_AGENT_OWNER");
    expect(await installed()).to.deep.equal([]);
    // The owner's refusals, each changing nothing.
    expect((await owner.call("install_skill", { agentId, slug: "keyed-lookup" })).code).to.equal("SKILL_NEEDS_SECRETS");
    expect((await owner.call("install_skill", { agentId, slug: "author-only" })).code).to.equal("SKILL_NOT_FOUND");
    expect((await owner.call("remove_skill", { agentId, slug: "alpine-guide" })).code).to.equal("SKILL_NOT_INSTALLED");
    expect(await installed()).to.deep.equal([]);

    const done = await owner.call("install_skill", { agentId, slug: "alpine-guide" });
    expect(done.isError).to.equal(false);
    expect(done.data).to.deep.include({ agentId });
    expect(done.text).to.equal(`Installed alpine-guide 1.0.0 into agent ${agentId} (tools none); it applies at the agent's next start.`);
    expect(await installed()).to.deep.equal(["alpine-guide"]);
    expect((await owner.call("install_skill", { agentId, slug: "alpine-guide" })).code).to.equal("SKILL_ALREADY_INSTALLED");
    expect((await other.call("remove_skill", { agentId, slug: "alpine-guide" })).code).to.equal("NOT_AGENT_OWNER");
    expect(await installed()).to.deep.equal(["alpine-guide"]);
    // The registry counts the install.
    expect(((await owner.call("list_skills", {})).data.skills as Array<{ slug: string; installs: number }>)[0]).to.deep.include({
      slug: "alpine-guide",
      installs: 1,
    });
    const removed = await owner.call("remove_skill", { agentId, slug: "alpine-guide" });
    expect(removed.data).to.deep.equal({ agentId, slug: "alpine-guide", removed: true });
    expect(await installed()).to.deep.equal([]);
  }

  it("the remote /mcp endpoint: list, search, show, install and remove, with owner checks and codes", async function () {
    const owner = await httpMcp(s.apiUrl, ownerKey);
    open.push(owner);
    const other = await httpMcp(s.apiUrl, otherKey);
    open.push(other);
    await exercise(owner, other);
  });

  it("market mcp over stdio: the same tools and refusals", async function () {
    const owner = await stdioMcp(await cliEnv(s, s.stranger, { apiKey: ownerKey, extra: { MARKET_MCP_STATE_DIR: taskDir({}) } }));
    open.push(owner);
    const other = await stdioMcp(await cliEnv(s, s.worker, { apiKey: otherKey, extra: { MARKET_MCP_STATE_DIR: taskDir({}) } }));
    open.push(other);
    await exercise(owner, other);
  });
});

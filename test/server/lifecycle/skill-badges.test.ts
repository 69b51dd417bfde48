/**
 * Per-skill stats and badges (issue 25 item 7, spec "Reputation" and the "Discovery" stats row): settled paid tasks
 * credit the worker's installed public skill that best matches the task's tags, through the real flow and the
 * indexer's projection; 5 completions with failures under 20% earn the skill's badge; a private skill never appears;
 * verified badges are granted and revoked by the service's admin only, and shown apart from the earned ones.
 *
 * The worker is a hosted agent here: its row and installed snapshots are written as the deploy writes them, with the
 * worker's own wallet as the agent's (the flow signs with it; a hosted agent's key is custodied by the service).
 */
import { expect } from "chai";
import { expectError, expectOk } from "../expect";
import { serverFixture, type TestServer } from "../harness";
import { bestMatchingSkill } from "@market/core/reputation";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { privateKeyOf } from "../harness";
import { AMOUNT, brief, CRITERIA, parties, PASSING, steps, type Steps } from "./helpers";

const ADMIN_KEY = "admin-key-for-skill-badges-0123456789";

interface BadgesAnswer {
  stats: Array<{ tag: string; completions: number; failures: number }>;
  skillStats: Array<{ skill: string; name: string; completions: number; failures: number }>;
  badges: Array<{ tag: string; kind: string }>;
  skillBadges: Array<{ skill: string; kind: string }>;
  verified: Array<{ kind: string; name: string; grantedAt: number }>;
}

const skillServer = serverFixture((s) => parties(s, ["summarization", "translation", "research"]), { adminApiKey: ADMIN_KEY });

describe("lifecycle: per-skill stats and badges (issue 25 item 7)", function () {
  this.timeout(120_000);
  let s: TestServer;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { agentKey, posterKey },
    } = await skillServer());
    t = steps(s);
  });
  afterEach(async function () {
    await s.close();
  });

  it("picks the installed skill sharing the most tags with the task, the earliest installed on a tie, none without a shared tag", function () {
    const a = { id: 1, capabilities: ["summarization"] };
    const b = { id: 2, capabilities: ["translation", "summarization"] };
    expect(bestMatchingSkill([a, b], ["summarization"])).to.equal(a);
    expect(bestMatchingSkill([a, b], ["summarization", "translation"])).to.equal(b);
    expect(bestMatchingSkill([b, a], ["summarization"])).to.equal(b);
    expect(bestMatchingSkill([a, b], ["research"])).to.equal(undefined);
    expect(bestMatchingSkill([a, b], [])).to.equal(undefined);
  });

  /** Skills by the poster's account; the worker's hosted-agent row with their snapshots installed in this order. */
  async function workerWithSkills(skills: Array<{ slug: string; capabilities: string[]; isPublic: boolean }>) {
    for (const skill of skills)
      expectOk(
        await s.call("POST", "/api/v1/skills", {
          key: posterKey,
          body: {
            slug: skill.slug,
            name: `Skill ${skill.slug}`,
            instructions: "Do it well.",
            capabilities: skill.capabilities,
            isPublic: skill.isPublic,
          },
        }),
      );
    const account = await s.db.selectFrom("account_wallets").select("account_id").where("address", "=", s.worker.address).executeTakeFirstOrThrow();
    const at = Date.now();
    const agent = await s.db
      .insertInto("hosted_agents")
      .values({
        address: s.worker.address,
        account_id: account.account_id,
        owner_address: s.worker.address,
        owner_public_key: publicKeyFromPrivateKey(privateKeyOf(s.worker)),
        display_name: "Skilled worker",
        instructions: "Work.",
        model_base_url: "http://127.0.0.1:9/v1",
        model_name: "m",
        capabilities: JSON.stringify(["summarization", "translation"]),
        min_reward: null,
        subtask_max_reward: null,
        state: "stopped",
        running_config: null,
        last_error: null,
        exported_at: null,
        created_at: at,
        updated_at: at,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    const rows = await s.db.selectFrom("skills").select(["id", "slug", "capabilities"]).execute();
    for (const [i, skill] of skills.entries()) {
      const row = rows.find((r) => r.slug === skill.slug)!;
      const snapshot = {
        skillId: row.id,
        slug: skill.slug,
        name: `Skill ${skill.slug}`,
        version: "1.0.0",
        instructions: "Do it well.",
        capabilities: skill.capabilities,
        secretRefs: [],
        tools: [],
      };
      await s.db
        .insertInto("hosted_agent_skills")
        .values({ agent_id: agent.id, slug: skill.slug, skill_id: row.id, snapshot: JSON.stringify(snapshot), installed_at: at + i })
        .execute();
    }
  }

  async function settleOne(capabilities: string[]) {
    const { taskHash } = await s.post(
      s.poster,
      posterKey,
      s.publicTask(brief(), { verificationCriteria: CRITERIA, requiredCapabilities: capabilities }),
      AMOUNT,
    );
    expectOk(await t.accept(agentKey, taskHash));
    expect((await t.deliverAndFinalize(s.worker, agentKey, taskHash, PASSING)).status).to.equal("verified");
    await s.sync();
  }

  const badges = async () => expectOk(await s.call<BadgesAnswer>("GET", `/api/v1/reputation/${s.worker.address}/badges`));

  it("credits the best-matching installed public skill per settled task; 5 completions earn its badge; a private skill never appears", async function () {
    await workerWithSkills([
      // Installed first and matching every tag, but private: never credited, never shown.
      { slug: "hidden-all", capabilities: ["summarization", "translation"], isPublic: false },
      { slug: "summarizer", capabilities: ["summarization"], isPublic: true },
      { slug: "translator", capabilities: ["translation", "summarization"], isPublic: true },
    ]);
    // One completion of the summarizer from before (a poster credits one agent at most 5 tasks a period: reputation
    // farming), then 4 settled tasks for it and one that the translator matches best.
    const summarizer = await s.db.selectFrom("skills").select("id").where("slug", "=", "summarizer").executeTakeFirstOrThrow();
    await s.db.insertInto("skill_stats").values({ address: s.worker.address, skill_id: summarizer.id, completions: 1, failures: 0 }).execute();
    for (let i = 0; i < 3; i++) await settleOne(["summarization"]);
    await settleOne(["summarization", "translation"]);
    let answer = await badges();
    expect(answer.skillStats).to.deep.equal([
      { skill: "summarizer", name: "Skill summarizer", completions: 4, failures: 0 },
      { skill: "translator", name: "Skill translator", completions: 1, failures: 0 },
    ]);
    expect(answer.skillBadges).to.deep.equal([]);
    await settleOne(["summarization"]);
    answer = await badges();
    expect(answer).to.deep.equal({
      stats: [
        { tag: "summarization", completions: 5, failures: 0 },
        { tag: "translation", completions: 1, failures: 0 },
      ],
      skillStats: [
        { skill: "summarizer", name: "Skill summarizer", completions: 5, failures: 0 },
        { skill: "translator", name: "Skill translator", completions: 1, failures: 0 },
      ],
      badges: [{ tag: "summarization", kind: "earned" }],
      skillBadges: [{ skill: "summarizer", kind: "earned" }],
      verified: [],
    });
    expect(await s.db.selectFrom("skill_stats").selectAll().execute()).to.have.length(2);
    // The registry shows each skill's record over every agent, beside its installs.
    const registry = expectOk(
      await s.call<{ skills: Array<{ slug: string; installs: number; completions: number; failures: number }> }>("GET", "/api/v1/skills"),
    );
    expect(registry.skills.map(({ slug, installs, completions, failures }) => ({ slug, installs, completions, failures }))).to.deep.equal([
      { slug: "translator", installs: 1, completions: 1, failures: 0 },
      { slug: "summarizer", installs: 1, completions: 5, failures: 0 },
    ]);
    expect(expectOk(await s.call<{ skill: { completions: number } }>("GET", "/api/v1/skills/summarizer")).skill.completions).to.equal(5);
    // Made private by its author: its record and badge leave the public answer.
    expectOk(await s.call("PATCH", "/api/v1/skills/summarizer", { key: posterKey, body: { isPublic: false } }));
    answer = await badges();
    expect(answer.skillStats.map((x) => x.skill)).to.deep.equal(["translator"]);
    expect(answer.skillBadges).to.deep.equal([]);
  });

  it("grants and revokes verified badges by the admin only, shown apart from the earned ones; refusals have their codes and change nothing", async function () {
    await workerWithSkills([
      { slug: "summarizer", capabilities: ["summarization"], isPublic: true },
      { slug: "private-one", capabilities: ["summarization"], isPublic: false },
    ]);
    const grant = (body: Record<string, unknown>, headers: Record<string, string> = { "x-admin-key": ADMIN_KEY }, key?: string) =>
      s.call<{ badge: { address: string; kind: string; name: string; grantedAt: number }; granted: boolean }>("POST", "/api/v1/admin/badges", {
        body,
        headers,
        ...(key ? { key } : {}),
      });
    const tagBadge = { address: s.worker.address, kind: "tag", name: "summarization" };
    // A signed-in account that is not the admin (its own API key, no admin key), and a wrong admin key: ADMIN_REQUIRED.
    expectError(await grant(tagBadge, {}, posterKey), "ADMIN_REQUIRED");
    expectError(await grant(tagBadge, {}, agentKey), "ADMIN_REQUIRED");
    expectError(await grant(tagBadge, { "x-admin-key": "not-the-admin-key" }, posterKey), "ADMIN_REQUIRED");
    expectError(await s.call("DELETE", `/api/v1/admin/badges/${s.worker.address}/tag/summarization`, { key: posterKey }), "ADMIN_REQUIRED");
    expect(await s.db.selectFrom("verified_badges").selectAll().execute()).to.deep.equal([]);
    // The admin's refusals: a private (or unknown) skill, an address that is no agent, a malformed tag.
    expectError(await grant({ address: s.worker.address, kind: "skill", name: "private-one" }), "SKILL_NOT_FOUND");
    expectError(await grant({ address: s.worker.address, kind: "skill", name: "no-such-skill" }), "SKILL_NOT_FOUND");
    expectError(await grant({ ...tagBadge, address: s.stranger.address }), "EXECUTOR_NOT_FOUND");
    expectError(await grant({ ...tagBadge, name: "Not A Tag" }), "VALIDATION_FAILED");
    expect(await s.db.selectFrom("verified_badges").selectAll().execute()).to.deep.equal([]);

    const granted = expectOk(await grant(tagBadge));
    expect(granted).to.deep.include({ granted: true });
    expect(granted.badge).to.deep.include({ address: s.worker.address, kind: "tag", name: "summarization" });
    expect(expectOk(await grant(tagBadge)).granted, "granting twice changes nothing").to.equal(false);
    expectOk(await grant({ address: s.worker.address.toLowerCase(), kind: "skill", name: "summarizer" }));
    const answer = await badges();
    expect(answer.badges, "earned ones stay apart").to.deep.equal([]);
    expect(answer.skillBadges).to.deep.equal([]);
    expect(answer.verified.map(({ kind, name }) => ({ kind, name }))).to.deep.equal([
      { kind: "skill", name: "summarizer" },
      { kind: "tag", name: "summarization" },
    ]);
    // A verified skill badge is shown only while the skill is public.
    expectOk(await s.call("PATCH", "/api/v1/skills/summarizer", { key: posterKey, body: { isPublic: false } }));
    expect((await badges()).verified.map((v) => v.name)).to.deep.equal(["summarization"]);

    const revoke = (kind: string, name: string) =>
      s.call("DELETE", `/api/v1/admin/badges/${s.worker.address}/${kind}/${name}`, { headers: { "x-admin-key": ADMIN_KEY } });
    expect(expectOk(await revoke("tag", "summarization"))).to.deep.equal({ revoked: true });
    expectError(await revoke("tag", "summarization"), "BADGE_NOT_FOUND");
    expect((await badges()).verified).to.deep.equal([]);
  });
});

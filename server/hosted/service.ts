import { isUniqueViolation, json } from "../db";
import type { Principal } from "../auth";
import type { OwnedAgentView, StoredTool, UpdateAgentBody } from "@market/core/api";
import { checkTools, prepareTools } from "./tools";
import { installedView, snapshotOf, withSkills, type SkillSnapshot } from "./installed-skills";
import { BUILTIN_TOOLS, MAX_SKILLS_PER_AGENT, type InstalledSkill } from "@market/core/api";
import { capabilityTags } from "../agents";
import { MarketError } from "@market/core/errors";
import { MAX_UINT256 } from "@market/core/limits";
import { checkDeployBounds } from "./deploy-bounds";
import { invalid, type HostedAgentsDeps } from "./agent-deps";
import { createDeploy } from "./deploy";
import { createLifecycle } from "./lifecycle";
import { createWalletOperations } from "./wallet";
import { createConversation } from "./conversation";

export type { DeployedAgent, HostedAgentsDeps, OnDeployed } from "./agent-deps";

export type HostedAgents = ReturnType<typeof createHostedAgents>;

/**
 * The owner's operations on hosted agents, and the deploy, bound from their modules: deploy.ts (the deploy),
 * lifecycle.ts (start, stop, restart, delete), wallet.ts (key export, the wallet hold, withdrawals), conversation.ts
 * (owner and agent messages); the owner's views, updates and skills are here.
 */
export function createHostedAgents(deps: HostedAgentsDeps) {
  const { db, store, fees, config, now } = deps;
  const lifecycle = createLifecycle(deps);
  const { deploy, checkUrl } = createDeploy(deps, lifecycle);
  const wallet = createWalletOperations(deps, lifecycle);
  const conversation = createConversation(deps);

  async function owned(principal: Principal, id: number): Promise<OwnedAgentView> {
    return store.ownedView(await store.requireOwned(id, principal));
  }

  async function mine(principal: Principal): Promise<OwnedAgentView[]> {
    const rows = await db
      .selectFrom("hosted_agents")
      .selectAll()
      .where("account_id", "=", principal.accountId)
      .where("state", "!=", "deleted")
      .orderBy("id")
      .execute();
    return Promise.all(rows.map((r) => store.ownedView(r)));
  }

  /**
   * Installs a skill by slug (a frozen snapshot; it joins the agent at its next start): `SKILL_NOT_FOUND` for a private
   * skill of another author, `SKILL_NEEDS_SECRETS` when the agent lacks a secret it needs (tool secrets are set at
   * deploy only), `SKILL_ALREADY_INSTALLED`, `SKILL_QUOTA_EXCEEDED`.
   */
  async function installSkill(principal: Principal, id: number, slug: string): Promise<InstalledSkill> {
    const row = await store.requireOwned(id, principal);
    const installed = await store.skills(id);
    if (installed.some((s) => s.snapshot.slug === slug)) throw new MarketError("SKILL_ALREADY_INSTALLED", `The agent has ${slug} installed already.`);
    if (installed.length >= MAX_SKILLS_PER_AGENT)
      throw new MarketError("SKILL_QUOTA_EXCEEDED", `An agent holds at most ${MAX_SKILLS_PER_AGENT} skills; remove one first.`);
    const skill = await deps.skills.forInstall(principal, slug);
    const secrets = await store.openToolSecrets(id);
    let snapshot: SkillSnapshot;
    try {
      snapshot = await snapshotOf(skill, { secret: (name) => secrets.get(name), allowPrivateNetworks: config.allowPrivateNetworks });
    } finally {
      secrets.clear();
    }
    // The names must still be unique once joined (refused now, not at the next start).
    withSkills({ instructions: row.instructions, tools: await store.tools(id), capabilities: [] }, BUILTIN_TOOLS, [
      ...installed.map((s) => s.snapshot),
      snapshot,
    ]);
    const at = now();
    try {
      await db
        .insertInto("hosted_agent_skills")
        .values({ agent_id: id, slug, skill_id: snapshot.skillId, snapshot: json.write(snapshot), installed_at: at })
        .execute();
    } catch (error) {
      if (isUniqueViolation(error)) throw new MarketError("SKILL_ALREADY_INSTALLED", `The agent has ${slug} installed already.`);
      throw error;
    }
    return installedView(snapshot, at);
  }

  /**
   * The owner's update (issue 25): instructions, display name, model, tools, capabilities and minimum reward, applied
   * at the next start (the running agent keeps its running config). The record, its wallet and its reputation stay.
   */
  async function update(principal: Principal, id: number, body: UpdateAgentBody): Promise<OwnedAgentView> {
    const row = await store.requireOwned(id, principal);
    // The deploy's bounds and tool rules hold for an update too (issue 23 item 2, issue 26's sandbox requirement).
    checkDeployBounds({ tools: body.tools });
    if (body.model) checkUrl("body.model.baseUrl", body.model.baseUrl);
    await checkTools(body.tools ?? [], { allowPrivateNetworks: config.allowPrivateNetworks, field: "body.tools", sandbox: deps.sandbox });
    const capabilities = body.capabilities === undefined ? undefined : capabilityTags(body.capabilities, "body.capabilities");
    if (body.minReward !== undefined && body.minReward !== null && BigInt(body.minReward) > MAX_UINT256)
      throw invalid("body.minReward", "is above 2^256-1");
    let tools: StoredTool[] | undefined;
    if (body.tools) {
      const secrets = await store.openToolSecrets(id);
      try {
        // Secrets are set at deploy only: a new tool may name only one the agent holds.
        body.tools.forEach((tool, i) => {
          const auth = "auth" in tool ? tool.auth : undefined;
          const ref = auth && auth.type !== "none" ? auth.secretRef : undefined;
          if (ref && !secrets.has(ref)) throw invalid(`body.tools.${i}.auth.secretRef`, `names ${ref}, which the agent does not hold`);
        });
        tools = await prepareTools(body.tools, {
          allowPrivateNetworks: config.allowPrivateNetworks,
          secret: (n) => secrets.get(n),
          field: "body.tools",
          sandbox: deps.sandbox,
        });
      } finally {
        secrets.clear();
      }
      withSkills(
        { instructions: row.instructions, tools, capabilities: [] },
        BUILTIN_TOOLS,
        (await store.skills(id)).map((k) => k.snapshot),
      );
    }
    await db.transaction().execute(async (trx) => {
      await trx
        .updateTable("hosted_agents")
        .set({
          ...(body.displayName === undefined ? {} : { display_name: body.displayName }),
          ...(body.instructions === undefined ? {} : { instructions: body.instructions }),
          ...(body.model ? { model_base_url: body.model.baseUrl, model_name: body.model.name } : {}),
          ...(capabilities === undefined ? {} : { capabilities: json.write(capabilities) }),
          ...(body.minReward === undefined ? {} : { min_reward: body.minReward }),
          updated_at: now(),
        })
        .where("id", "=", id)
        .execute();
      if (tools) {
        await trx.deleteFrom("hosted_agent_tools").where("agent_id", "=", id).execute();
        if (tools.length > 0)
          await trx
            .insertInto("hosted_agent_tools")
            .values(tools.map((tool) => ({ agent_id: id, name: tool.name, origin: "update", definition: json.write(tool) })))
            .execute();
      }
    });
    const updated = await store.find(id);
    if (!updated) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
    return store.ownedView(updated);
  }

  /** Removes an installed skill (applies at the next start): `SKILL_NOT_INSTALLED` when it is not. */
  async function removeSkill(principal: Principal, id: number, slug: string): Promise<{ slug: string; removed: true }> {
    await store.requireOwned(id, principal);
    const result = await db.deleteFrom("hosted_agent_skills").where("agent_id", "=", id).where("slug", "=", slug).executeTakeFirst();
    if (Number(result.numDeletedRows) === 0) throw new MarketError("SKILL_NOT_INSTALLED", `The agent has no skill ${slug} installed.`);
    return { slug, removed: true };
  }

  async function installedSkills(principal: Principal, id: number): Promise<InstalledSkill[]> {
    await store.requireOwned(id, principal);
    return (await store.skills(id)).map((s) => installedView(s.snapshot, s.installedAt));
  }

  return {
    deploy,
    update,
    installSkill,
    removeSkill,
    installedSkills,
    start: lifecycle.start,
    stop: lifecycle.stop,
    restart: lifecycle.restart,
    exportKey: wallet.exportKey,
    withdraw: wallet.withdraw,
    holdWallet: wallet.holdWallet,
    remove: lifecycle.remove,
    sendMessage: conversation.sendMessage,
    messages: conversation.messages,
    owned,
    mine,
    list: store.list,
    terms: fees.terms,
  };
}

/** The deploy of a hosted agent (server/hosted/service.ts binds the operations): its checks, quota, fee and record. */
import { Wallet } from "ethers";
import type { Transaction } from "kysely";
import type { Database, Db } from "../db";
import { isUniqueViolation, json, retryConflicts } from "../db";
import type { Principal } from "../auth";
import type { Deployed, DeployAgentBody, StoredTool } from "@market/core/api";
import { asAddress, asRawAmount } from "@market/core/api";
import { checkTools, prepareTools } from "./tools";
import { snapshotOf, withSkills, type SkillSnapshot } from "./installed-skills";
import { BUILTIN_TOOLS } from "@market/core/api";
import { capabilityTags } from "../agents";
import { createSharedWindows, rateLimited } from "../http/rate-limit";
import { MarketError } from "@market/core/errors";
import { normalizePublicKey } from "@market/core/crypto";
import { MAX_UINT256 } from "@market/core/limits";
import type { SecretEntry } from "./store";
import { privateUrlReason } from "./runner/bounds";
import { checkDeployBounds } from "./deploy-bounds";
import { sealCopiesOffLoop } from "./sealer";
import { invalid, type HostedAgentsDeps } from "./agent-deps";
import type { Lifecycle } from "./lifecycle";

/** Default limit of one sub-task's reward when the option is on without one: 1 USDC. */
const DEFAULT_SUBTASK_MAX_REWARD = 1_000_000n;

export function createDeploy(deps: HostedAgentsDeps, { start }: Pick<Lifecycle, "start">) {
  const { db, store, fees, config, now } = deps;
  /** Deploys per account per hour, counted in the database: every API process shares the count. */
  const deployWindows = createSharedWindows(db, "deploys", 60 * 60_000);

  function checkUrl(field: string, url: string) {
    if (config.allowPrivateNetworks) return;
    const reason = privateUrlReason(url);
    if (reason) throw invalid(field, reason);
  }

  /** `AGENT_QUOTA_EXCEEDED` when the account already has `maxAgentsPerAccount` agents (deleted ones not counted). */
  async function checkQuota(q: Db | Transaction<Database>, accountId: number): Promise<void> {
    const owned = await q
      .selectFrom("hosted_agents")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("account_id", "=", accountId)
      .where("state", "!=", "deleted")
      .executeTakeFirstOrThrow();
    if (Number(owned.n) >= config.maxAgentsPerAccount)
      throw new MarketError("AGENT_QUOTA_EXCEEDED", `An account may have ${config.maxAgentsPerAccount} hosted agents.`);
  }

  async function deploy(principal: Principal, body: DeployAgentBody): Promise<Deployed> {
    if (principal.kind === "hostedAgent") {
      throw new MarketError("HOSTED_AGENT_TOKEN_REFUSED", "A hosted agent's token cannot deploy agents.");
    }
    if (!config.masterKey) throw new MarketError("HOSTING_UNAVAILABLE");
    // Issue 23 item 2: the body's counts first, before anything is counted, paid or sealed.
    checkDeployBounds(body);
    let ownerPublicKey: string;
    try {
      if (!/^(0x)?04[0-9a-fA-F]{128}$/.test(body.ownerPublicKey.trim())) throw new Error("not 130 hex characters starting 04");
      ownerPublicKey = normalizePublicKey(body.ownerPublicKey);
    } catch (cause) {
      throw new MarketError("INVALID_PUBLIC_KEY", "ownerPublicKey must be an uncompressed secp256k1 public key (130 hex characters, 04...).", {
        cause,
      });
    }
    checkUrl("body.model.baseUrl", body.model.baseUrl);
    // Each tool's text (and the sandbox, for a sandbox tool) is checked before anything costs us; MCP servers are
    // listed after the deploy quota below.
    await checkTools(body.tools ?? [], { allowPrivateNetworks: config.allowPrivateNetworks, field: "body.tools", sandbox: deps.sandbox });
    const capabilities = capabilityTags(body.capabilities ?? [], "body.capabilities");
    if (body.minReward !== undefined && BigInt(body.minReward) > MAX_UINT256) throw invalid("body.minReward", "is above 2^256-1");
    let subtaskMaxReward: string | null = null;
    if (body.subtasks?.enabled) {
      const max = BigInt(body.subtasks.maxRewardRaw ?? DEFAULT_SUBTASK_MAX_REWARD);
      if (max <= 0n || max > MAX_UINT256) throw invalid("body.subtasks.maxRewardRaw", "must be above 0");
      subtaskMaxReward = max.toString();
    }

    const retryAfter = await deployWindows.hit(`account:${principal.accountId}`, config.deploysPerHour, now());
    if (retryAfter !== undefined) throw rateLimited(retryAfter, "deploys");
    // Refused early (before the fee is looked at); checked again, atomically, where the agent is inserted.
    await checkQuota(db, principal.accountId);
    const tools: StoredTool[] = await prepareTools(body.tools ?? [], {
      allowPrivateNetworks: config.allowPrivateNetworks,
      secret: (name) => body.toolSecrets?.[name],
      field: "body.tools",
      sandbox: deps.sandbox,
    });
    // Skills by slug: a private skill of another author is SKILL_NOT_FOUND; each one's snapshot taken now.
    const slugs = body.skills ?? [];
    if (new Set(slugs).size !== slugs.length) throw new MarketError("SKILL_ALREADY_INSTALLED", "body.skills names a skill twice.");
    const snapshots: SkillSnapshot[] = [];
    for (const slug of slugs) {
      const skill = await deps.skills.forInstall(principal, slug);
      snapshots.push(await snapshotOf(skill, { secret: (name) => body.toolSecrets?.[name], allowPrivateNetworks: config.allowPrivateNetworks }));
    }
    withSkills({ instructions: body.instructions, tools, capabilities }, BUILTIN_TOOLS, snapshots);

    const fee = await fees.verify(body.feeTxHash, principal.accountId);
    const wallet = Wallet.createRandom();
    const entries: SecretEntry[] = [
      { kind: "wallet", name: "wallet", value: wallet.privateKey },
      ...(body.model.apiKey ? [{ kind: "model" as const, name: "model", value: body.model.apiKey }] : []),
      ...Object.entries(body.toolSecrets ?? {}).map(([name, value]) => ({ kind: "tool" as const, name, value })),
    ];
    // The owner's ECIES copies off the event loop (issue 23 item 2); the vault's AES sealing stays (microseconds).
    let copies: string[];
    try {
      copies = await sealCopiesOffLoop(
        entries.map((e) => e.value),
        ownerPublicKey,
      );
    } catch (cause) {
      throw new MarketError("HOSTING_UNAVAILABLE", "The secrets could not be sealed; nothing was stored or charged. Retry.", { cause });
    }
    const secrets = entries.map((e, i) => ({ ...e, ownerCopy: copies[i]! }));
    const at = now();
    let agentId: number;
    try {
      agentId = await retryConflicts(() =>
        db.transaction().execute(async (trx) => {
          // The account's row is locked first (a no-op update; SQLite has one writer at a time already), so two deploys
          // of one account count and insert one after the other and never exceed the quota together.
          await trx
            .updateTable("accounts")
            .set((eb) => ({ created_at: eb.ref("created_at") }))
            .where("id", "=", principal.accountId)
            .execute();
          await checkQuota(trx, principal.accountId);
          const row = await trx
            .insertInto("hosted_agents")
            .values({
              address: wallet.address,
              account_id: principal.accountId,
              owner_address: principal.wallet,
              owner_public_key: ownerPublicKey,
              display_name: body.displayName,
              instructions: body.instructions,
              model_base_url: body.model.baseUrl,
              model_name: body.model.name,
              capabilities: json.write(capabilities),
              min_reward: body.minReward ?? null,
              subtask_max_reward: subtaskMaxReward,
              state: "stopped",
              running_config: null,
              last_error: null,
              exported_at: null,
              created_at: at,
              updated_at: at,
            })
            .returning("id")
            .executeTakeFirstOrThrow();
          if (tools.length > 0) {
            await trx
              .insertInto("hosted_agent_tools")
              .values(tools.map((tool) => ({ agent_id: row.id, name: tool.name, origin: "deploy", definition: json.write(tool) })))
              .execute();
          }
          if (snapshots.length > 0) {
            await trx
              .insertInto("hosted_agent_skills")
              .values(
                snapshots.map((snapshot, i) => ({
                  agent_id: row.id,
                  slug: snapshot.slug,
                  skill_id: snapshot.skillId,
                  snapshot: json.write(snapshot),
                  installed_at: at + i,
                })),
              )
              .execute();
          }
          await store.storeSecrets(trx, row.id, ownerPublicKey, secrets);
          if (fee) {
            await trx
              .insertInto("deploy_fee_credits")
              .values({
                chain: fees.chainName(),
                tx_hash: fee.txHash,
                agent_id: row.id,
                account_id: principal.accountId,
                payer: fee.payer,
                amount: fee.amount.toString(),
                credited_at: at,
              })
              .execute();
          }
          return row.id;
        }),
      );
    } catch (error) {
      // Another deploy credited the same fee transaction first: nothing of this one was kept.
      if (fee && isUniqueViolation(error))
        throw new MarketError("DEPLOY_FEE_NOT_PAID", "This fee transaction already paid for another deploy.", { reason: "ALREADY_CREDITED" });
      throw error;
    }
    if (deps.onDeployed) {
      try {
        await deps.onDeployed({
          id: agentId,
          address: wallet.address,
          publicKey: wallet.signingKey.publicKey,
          accountId: principal.accountId,
          ownerAddress: principal.wallet,
          displayName: body.displayName,
        });
      } catch (error) {
        await store.setState(agentId, { last_error: `after deploy: ${(error as Error).message}`.slice(0, 1000) });
      }
    }
    if (body.start !== false) await start(principal, agentId);
    const row = await store.find(agentId);
    return {
      agent: await store.ownedView(row!),
      fee: fee ? { txHash: fee.txHash, payer: asAddress(fee.payer), amount: asRawAmount(fee.amount) } : null,
    };
  }

  return { deploy, checkUrl };
}

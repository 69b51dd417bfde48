import { Contract, Wallet, getAddress } from "ethers";
import type { Transaction } from "kysely";
import type { Database, Db } from "../db";
import { isUniqueViolation, json, retryConflicts } from "../db";
import { chainCall, chainUnavailable, type Chain } from "../chains";
import type { Principal } from "../auth";
import type { HostedConfig } from "../config";
import type {
  AgentMessage,
  Deployed,
  DeployAgentBody,
  ExportedKey,
  OwnedAgentView,
  StoredTool,
  UpdateAgentBody,
  WithdrawBody,
  Withdrawal,
} from "../../core/api";
import { asAddress, asRawAmount } from "../../core/api";
import { checkTools, prepareTools } from "./tools";
import type { Sandbox } from "../sandbox";
import type { SkillStore } from "../skills";
import { installedView, snapshotOf, withSkills, type SkillSnapshot } from "./installed-skills";
import { BUILTIN_TOOLS, MAX_SKILLS_PER_AGENT, type InstalledSkill } from "../../core/api";
import { capabilityTags } from "../agents";
import { createSharedWindows, rateLimited } from "../http/rate-limit";
import { MarketError } from "../../core/errors";
import { normalizePublicKey } from "../../core/crypto";
import { isNodeRefusal } from "../../core/revert";
import { MAX_UINT256 } from "../../core/limits";
import { Ending } from "../../core/escrow";
import type { HostedStore, SecretEntry } from "./store";
import type { HostedAgent } from "../db/schema";
import type { DeployFees } from "./fees";
import type { HostedRunners } from "./runner";
import { privateUrlReason } from "./runner/bounds";
import { checkDeployBounds } from "./deploy-bounds";
import { appendMessage, forgetMessages, MESSAGE_RETENTION_MS, MESSAGES_KEPT } from "./messages";
import { sealCopiesOffLoop } from "./sealer";

const ERC20 = ["function balanceOf(address) view returns (uint256)", "function transfer(address to, uint256 amount) returns (bool)"];
/** Default limit of one sub-task's reward when the option is on without one: 1 USDC. */
const DEFAULT_SUBTASK_MAX_REWARD = 1_000_000n;
/** A withdrawal's receipt is awaited this long before the answer is TX_PENDING. */
const WITHDRAW_WAIT_MS = 60_000;

const invalid = (field: string, message: string) => new MarketError("VALIDATION_FAILED", `${field} ${message}`, { details: [{ field, message }] });

export type HostedAgents = ReturnType<typeof createHostedAgents>;

/** A new hosted agent, as the deploy hook sees it. */
export interface DeployedAgent {
  id: number;
  /** Its wallet, generated and custodied by the service. */
  address: string;
  /** The wallet's uncompressed secp256k1 public key (0x04…): the key its briefs are wrapped to. */
  publicKey: string;
  accountId: number;
  ownerAddress: string;
  displayName: string;
}

/**
 * What runs once for every new agent, after its record (with its fee credit) is committed and before it starts: the
 * one place a deploy hands the agent to other features (the identity token's mint, issue 13). A failure is recorded
 * as the agent's `lastError` and logged; the deploy stands (its fee is credited and its wallet exists).
 */
export type OnDeployed = (agent: DeployedAgent) => Promise<void>;

/** The owner's operations on hosted agents, and the deploy. */
export function createHostedAgents(deps: {
  db: Db;
  store: HostedStore;
  fees: DeployFees;
  runners: HostedRunners;
  skills: Pick<SkillStore, "forInstall">;
  settlementChain: () => Chain;
  config: Pick<HostedConfig, "deploysPerHour" | "maxAgentsPerAccount" | "allowPrivateNetworks" | "masterKey" | "walletHoldMs">;
  now: () => number;
  onDeployed?: OnDeployed;
  /** Sandbox tools are refused (SANDBOX_UNAVAILABLE) when it has no working sandbox. */
  sandbox: Pick<Sandbox, "requireAvailable">;
}) {
  const { db, store, fees, runners, config, now } = deps;
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

  /** Why a transition of the agent lost to another: the agent's state as it is now, as a refusal. */
  async function lostTransition(id: number): Promise<MarketError> {
    const now = await store.find(id);
    if (!now) return new MarketError("HOSTED_AGENT_NOT_FOUND");
    if (now.state === "withdrawing")
      return new MarketError(
        "WITHDRAWAL_IN_PROGRESS",
        "The service is signing from the agent's wallet (a withdrawal, or an MCP spend of its owner's); retry once it has ended.",
      );
    if (now.state === "running") return new MarketError("AGENT_RUNNING", "Stop the agent first.");
    return new MarketError("WITHDRAWAL_IN_PROGRESS", "The agent changed state meanwhile; retry.");
  }

  /** Starts the agent with its current configuration; it registers its key and chains, then browses. */
  async function start(principal: Principal, id: number): Promise<OwnedAgentView> {
    const row = await store.requireOwned(id, principal);
    if (row.state !== "running") {
      const running = await store.runningConfig(row);
      // Only a stopped agent starts: never one being withdrawn from (its wallet's nonce is in use), nor one deleted
      // meanwhile. Started by another call meanwhile is fine.
      if (!(await store.transition(id, ["stopped"], "running", { running_config: json.write(running), last_error: null }))) {
        const lost = await lostTransition(id);
        if (lost.code !== "AGENT_RUNNING") throw lost;
      }
    }
    await runners.launch(id).catch(() => undefined);
    const now = await store.find(id);
    if (!now) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
    return store.ownedView(now);
  }

  async function stop(principal: Principal, id: number): Promise<OwnedAgentView> {
    await store.requireOwned(id, principal);
    // The runner stops first, while its token still works: a delivery already under way completes. A start racing
    // this stop may launch again in between: the launch after the state change stops that run.
    await runners.halt(id);
    await store.transition(id, ["running"], "stopped", { running_config: null });
    await runners.launch(id).catch(() => undefined);
    const now = await store.find(id);
    if (!now) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
    return store.ownedView(now);
  }

  async function restart(principal: Principal, id: number): Promise<OwnedAgentView> {
    await stop(principal, id);
    return start(principal, id);
  }

  /** The wallet key sealed to the owner's public key; every export is recorded first (no record, no key). */
  async function exportKey(principal: Principal, id: number, ip: string | undefined): Promise<ExportedKey> {
    const row = await store.requireOwned(id, principal);
    const sealed = await store.ownerCopy(id, "wallet", "wallet");
    if (!sealed) throw new MarketError("HOSTED_AGENT_NOT_FOUND", "The agent has no custodied wallet key.");
    const at = now();
    let exports: number;
    try {
      exports = await db.transaction().execute(async (trx) => {
        await trx
          .insertInto("key_exports")
          .values({ agent_id: id, account_id: principal.accountId, ip: ip?.slice(0, 64) ?? null, exported_at: at })
          .execute();
        if (row.exported_at === null)
          await trx
            .updateTable("hosted_agents")
            .set({ exported_at: at, updated_at: at })
            .where("id", "=", id)
            .where("exported_at", "is", null)
            .execute();
        const counted = await trx
          .selectFrom("key_exports")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("agent_id", "=", id)
          .executeTakeFirstOrThrow();
        return Number(counted.n);
      });
    } catch (cause) {
      throw new MarketError("KEY_EXPORT_NOT_RECORDED", undefined, { cause });
    }
    return {
      agentId: id,
      address: asAddress(row.address),
      encryptedPrivateKey: sealed,
      ownerPublicKey: row.owner_public_key,
      exportedAt: at,
      exports,
    };
  }

  /**
   * Runs `use` with the stopped agent's wallet held for the service's signature: the agent is held `withdrawing`
   * meanwhile (one state change in the database, seen by every API process), so a start, a withdrawal, a delete or
   * another holder racing it is refused (`WITHDRAWAL_IN_PROGRESS`) instead of signing with the same nonce; a running
   * agent is `AGENT_RUNNING` ("Stop the agent before `what`"). The hold is renewed every third of `walletHoldMs` while
   * `use` runs: one left by a process that died lapses. `keep()` leaves it to lapse instead of releasing it at the end
   * (a sent transaction not confirmed).
   */
  async function holdWallet<T>(
    principal: Principal,
    id: number,
    what: string,
    use: (row: HostedAgent, hold: { keep(): void }) => Promise<T>,
  ): Promise<T> {
    const row = await store.requireOwned(id, principal);
    const running = () => new MarketError("AGENT_RUNNING", `Stop the agent before ${what}.`);
    if (row.state === "running" || runners.isRunning(id)) throw running();
    if (!(await store.transition(id, ["stopped"], "withdrawing"))) {
      const lost = await lostTransition(id);
      throw lost.code === "AGENT_RUNNING" ? running() : lost;
    }
    const renewing = setInterval(() => {
      store.transition(id, ["withdrawing"], "withdrawing").catch(() => undefined);
    }, config.walletHoldMs / 3);
    renewing.unref();
    let release = true;
    try {
      // A run still stopping would sign with the same wallet.
      if (runners.isRunning(id)) throw running();
      return await use(row, { keep: () => void (release = false) });
    } finally {
      clearInterval(renewing);
      if (release) await store.transition(id, ["withdrawing"], "stopped");
    }
  }

  /**
   * Sends the settlement token from the stopped agent's wallet to the owner's address, signed by the service, with the
   * wallet held (`holdWallet`). A sent transfer not confirmed keeps the hold until it lapses.
   */
  async function withdraw(principal: Principal, id: number, body: WithdrawBody): Promise<Withdrawal> {
    await store.requireOwned(id, principal);
    const chain = deps.settlementChain();
    if (body.chain !== undefined && body.chain !== chain.name) {
      throw new MarketError(
        "BRIDGE_UNAVAILABLE",
        `Withdrawals go to the owner's address on ${chain.name}; bridging to ${body.chain} is not offered.`,
      );
    }
    return holdWallet(principal, id, "withdrawing", (row, hold) => transfer(row, chain, body, hold.keep));
  }

  async function transfer(row: HostedAgent, chain: Chain, body: WithdrawBody, sentUnconfirmed: () => void): Promise<Withdrawal> {
    const id = row.id;
    const wallet = new Wallet(await store.openWalletKey(id), chain.provider);
    const token = new Contract(chain.config.token, ERC20, wallet);
    const balance = (await chainCall(() => token.getFunction("balanceOf")(wallet.address))) as bigint;
    const amount = body.amountRaw === undefined ? balance : BigInt(body.amountRaw);
    if (amount === 0n || amount > balance) throw new MarketError("NOTHING_TO_WITHDRAW", `The agent's wallet holds ${balance} raw units.`);
    const to = getAddress(row.owner_address);
    let sent: { hash: string; wait(confirms: number, timeoutMs: number): Promise<{ status: number | null } | null> };
    try {
      sent = await token.getFunction("transfer")(to, amount);
    } catch (error) {
      if (isNodeRefusal(error))
        throw new MarketError("TX_REJECTED", "The node refused the transfer (the agent's wallet cannot pay its gas?); nothing was sent.", {
          cause: error,
        });
      throw chainUnavailable(error, chain.name);
    }
    const txHash = sent.hash;
    let receipt: { status: number | null } | null;
    try {
      receipt = await sent.wait(1, WITHDRAW_WAIT_MS);
    } catch (error) {
      if ((error as { code?: string }).code === "CALL_EXCEPTION")
        throw new MarketError("TX_REVERTED", `The withdrawal ${txHash} reverted.`, { cause: error });
      sentUnconfirmed();
      throw new MarketError("TX_PENDING", `The withdrawal ${txHash} is sent but not confirmed yet.`, {
        details: [{ message: "pending", txHash }],
        cause: error,
      });
    }
    if (receipt?.status !== 1) throw new MarketError("TX_REVERTED", `The withdrawal ${txHash} reverted.`);
    return {
      agentId: id,
      chain: chain.name,
      from: asAddress(wallet.address),
      to: asAddress(to),
      token: asAddress(chain.config.token),
      amount: asRawAmount(amount),
      txHash,
    };
  }

  /**
   * Stops the agent, destroys its secrets and hides it. Refused (`WRONG_STATE`) while its key was never exported and
   * its wallet holds settlement tokens (reason FUNDS_LEFT: withdraw or export first) or it is the worker of a task not
   * ended (reason TASKS_IN_HAND: a payout, a ruling for it or its escalated work would reach a wallet nobody holds a
   * key to; wait for the tasks to end, or export first).
   */
  async function remove(principal: Principal, id: number): Promise<{ id: number; deleted: true }> {
    const row = await store.requireOwned(id, principal);
    if (row.exported_at === null) {
      const held = await db
        .selectFrom("escrow_tasks")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("worker", "=", row.address)
        .where("ending", "=", Ending.None)
        .executeTakeFirstOrThrow();
      if (Number(held.n) > 0) {
        throw new MarketError(
          "WRONG_STATE",
          `The agent is the worker of ${held.n} task(s) not ended; their payouts would reach a wallet whose key is destroyed. Wait for them to end, or export the key before deleting.`,
          { reason: "TASKS_IN_HAND" },
        );
      }
      const chain = deps.settlementChain();
      const token = new Contract(chain.config.token, ERC20, chain.provider);
      const balance = (await chainCall(() => token.getFunction("balanceOf")(row.address))) as bigint;
      if (balance > 0n) {
        throw new MarketError("WRONG_STATE", `The agent's wallet holds ${balance} raw units; withdraw them or export the key before deleting.`, {
          reason: "FUNDS_LEFT",
        });
      }
    }
    // Deleted first, in one state change: a start racing this delete finds nothing to start, and a withdrawal under
    // way keeps the agent (WITHDRAWAL_IN_PROGRESS). Then its run stops and its secrets go.
    if (!(await store.transition(id, ["running", "stopped"], "deleted", { running_config: null }))) throw await lostTransition(id);
    await runners.halt(id);
    await db.transaction().execute(async (trx) => {
      await trx.deleteFrom("hosted_agent_secrets").where("agent_id", "=", id).execute();
      await trx.deleteFrom("hosted_agent_tokens").where("agent_id", "=", id).execute();
      await forgetMessages(trx, id);
      // No longer offered tasks: its registration goes (its reputation stays with the wallet).
      await trx.deleteFrom("agent_capabilities").where("agent_address", "=", row.address).execute();
      await trx.deleteFrom("agents").where("address", "=", row.address).execute();
    });
    return { id, deleted: true };
  }

  /** The owner, or the agent itself (its own token). */
  async function party(principal: Principal, id: number): Promise<"owner" | "agent"> {
    const row = await store.find(id);
    if (!row) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
    if (principal.kind === "hostedAgent") {
      if (principal.hostedAgentId !== id)
        throw new MarketError("NOT_AGENT_OWNER", "Only the agent's owner and the agent itself exchange these messages.");
      return "agent";
    }
    if (row.account_id !== principal.accountId)
      throw new MarketError("NOT_AGENT_OWNER", "Only the agent's owner and the agent itself exchange these messages.");
    return "owner";
  }

  async function sendMessage(principal: Principal, id: number, body: string): Promise<AgentMessage> {
    const sender = await party(principal, id);
    const at = now();
    // Within the sender's quota; the conversation trimmed to what is kept (issue 23 item 8).
    const messageId = await appendMessage(db, id, sender, body, at);
    return { id: messageId, sender, body, createdAt: at };
  }

  async function messages(principal: Principal, id: number): Promise<AgentMessage[]> {
    await party(principal, id);
    const rows = await db
      .selectFrom("hosted_agent_messages")
      .selectAll()
      .where("agent_id", "=", id)
      .where("created_at", ">=", now() - MESSAGE_RETENTION_MS)
      .orderBy("id", "desc")
      .limit(MESSAGES_KEPT)
      .execute();
    return rows.reverse().map((m) => ({ id: m.id, sender: m.sender, body: m.body, createdAt: m.created_at }));
  }

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
    start,
    stop,
    restart,
    exportKey,
    withdraw,
    holdWallet,
    remove,
    sendMessage,
    messages,
    owned,
    mine,
    list: store.list,
    terms: fees.terms,
  };
}

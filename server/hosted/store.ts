import type { Transaction } from "kysely";
import { json, type Db, type Database } from "../db";
import type { HostedAgent } from "../db/schema";
import type { Vault } from "./vault";
import type { Principal } from "../auth";
import { MarketError } from "@market/core/errors";
import { sealToPublicKey } from "@market/core/crypto";
import {
  BUILTIN_TOOLS,
  asAddress,
  asRawAmount,
  isSandboxTool,
  type HostedAgentView,
  type OwnedAgentView,
  type PublicTool,
  type StoredTool,
} from "@market/core/api";
import { MAX_SERIAL_ID } from "../db";
import { installedView, withSkills, type SkillSnapshot } from "./installed-skills";
import { appendEvents } from "../events";

export type SecretKind = "wallet" | "model" | "tool";

export interface SecretEntry {
  kind: SecretKind;
  name: string;
  value: string;
  /** The owner's ECIES copy when already made (off the event loop: sealer.ts); made here otherwise. */
  ownerCopy?: string;
}

/** What a running agent works with, fixed when it starts (changes apply after a restart). */
export interface RunningConfig {
  displayName: string;
  instructions: string;
  model: { baseUrl: string; name: string };
  capabilities: string[];
  minReward: string | null;
  tools: StoredTool[];
  subtaskMaxReward: string | null;
}

/** The secrets of one agent, opened in memory. */
export interface OpenedSecrets {
  walletKey: string;
  modelKey?: string;
  tools: Map<string, string>;
  /** Every value, for the redactor. */
  all(): string[];
}

const MASK = "****";
const secretContext = (agentId: number, kind: string, name: string) => `agent:${agentId}:${kind}:${name}`;

export type HostedStore = ReturnType<typeof createHostedStore>;

/** Hosted-agent records, their tools and their custodied secrets. */
/**
 * `holdLapseMs`: a hold on an agent's wallet (`withdrawing`) not renewed for this long was left by a process that
 * ended: it counts as `stopped`. A start and a stop append `agent.started` / `agent.stopped` to `eventChain`'s log in
 * the transaction that changes the state.
 */
export function createHostedStore({
  db,
  vault,
  now,
  holdLapseMs,
  eventChain,
}: {
  db: Db;
  vault: Vault | undefined;
  now: () => number;
  holdLapseMs: number;
  /** The chain whose event log records agents started and stopped (issue 27); none: not recorded. */
  eventChain?: () => string;
}) {
  function requireVault(): Vault {
    if (!vault) throw new MarketError("HOSTING_UNAVAILABLE");
    return vault;
  }

  /** Seals each secret under the master key and, as a copy, to the owner's public key. */
  async function storeSecrets(trx: Transaction<Database>, agentId: number, ownerPublicKey: string, entries: SecretEntry[]) {
    const sealer = requireVault();
    if (entries.length === 0) return;
    const at = now();
    await trx
      .insertInto("hosted_agent_secrets")
      .values(
        entries.map((e) => ({
          agent_id: agentId,
          kind: e.kind,
          name: e.name,
          sealed: sealer.seal(e.value, secretContext(agentId, e.kind, e.name)),
          owner_copy: e.ownerCopy ?? sealToPublicKey(Buffer.from(e.value, "utf8"), ownerPublicKey),
          created_at: at,
        })),
      )
      .execute();
  }

  async function openSecrets(agentId: number): Promise<OpenedSecrets> {
    const sealer = requireVault();
    const rows = await db.selectFrom("hosted_agent_secrets").selectAll().where("agent_id", "=", agentId).execute();
    let walletKey: string | undefined;
    let modelKey: string | undefined;
    const tools = new Map<string, string>();
    for (const row of rows) {
      const value = sealer.open(row.sealed, secretContext(agentId, row.kind, row.name));
      if (row.kind === "wallet") walletKey = value;
      else if (row.kind === "model") modelKey = value;
      else tools.set(row.name, value);
    }
    if (!walletKey) throw new Error(`hosted agent ${agentId} has no wallet key`);
    const key = walletKey;
    return {
      walletKey: key,
      ...(modelKey === undefined ? {} : { modelKey }),
      tools,
      all: () => [key, ...(modelKey ? [modelKey] : []), ...tools.values()],
    };
  }

  /** The agent's tool secrets alone, opened in memory (its wallet and model keys stay sealed). */
  async function openToolSecrets(agentId: number): Promise<Map<string, string>> {
    const sealer = requireVault();
    const rows = await db
      .selectFrom("hosted_agent_secrets")
      .select(["name", "sealed"])
      .where("agent_id", "=", agentId)
      .where("kind", "=", "tool")
      .execute();
    return new Map(rows.map((row) => [row.name, sealer.open(row.sealed, secretContext(agentId, "tool", row.name))]));
  }

  /** The agent's wallet key alone, opened in memory (its other secrets stay sealed). */
  async function openWalletKey(agentId: number): Promise<string> {
    const sealer = requireVault();
    const row = await db
      .selectFrom("hosted_agent_secrets")
      .select(["name", "sealed"])
      .where("agent_id", "=", agentId)
      .where("kind", "=", "wallet")
      .executeTakeFirst();
    if (!row) throw new Error(`hosted agent ${agentId} has no wallet key`);
    return sealer.open(row.sealed, secretContext(agentId, "wallet", row.name));
  }

  async function ownerCopy(agentId: number, kind: SecretKind, name: string): Promise<string | undefined> {
    const row = await db
      .selectFrom("hosted_agent_secrets")
      .select("owner_copy")
      .where("agent_id", "=", agentId)
      .where("kind", "=", kind)
      .where("name", "=", name)
      .executeTakeFirst();
    return row?.owner_copy;
  }

  async function find(id: number): Promise<HostedAgent | undefined> {
    if (!Number.isSafeInteger(id) || id < 1 || id > MAX_SERIAL_ID) return undefined;
    const row = await db.selectFrom("hosted_agents").selectAll().where("id", "=", id).executeTakeFirst();
    return row && row.state !== "deleted" ? row : undefined;
  }

  /** The agent, for its owner only: `HOSTED_AGENT_NOT_FOUND`, or `NOT_AGENT_OWNER` for another account (or the agent's own token). */
  async function requireOwned(id: number, principal: Principal): Promise<HostedAgent> {
    const row = await find(id);
    if (!row) throw new MarketError("HOSTED_AGENT_NOT_FOUND");
    if (row.account_id !== principal.accountId || principal.kind === "hostedAgent") throw new MarketError("NOT_AGENT_OWNER");
    return row;
  }

  async function tools(agentId: number): Promise<StoredTool[]> {
    const rows = await db.selectFrom("hosted_agent_tools").select("definition").where("agent_id", "=", agentId).orderBy("name").execute();
    return rows.map((r) => json.read<StoredTool>(r.definition)!);
  }

  /** The agent's installed skills (their snapshots), in install order. */
  async function skills(agentId: number): Promise<Array<{ snapshot: SkillSnapshot; installedAt: number }>> {
    const rows = await db
      .selectFrom("hosted_agent_skills")
      .select(["snapshot", "installed_at"])
      .where("agent_id", "=", agentId)
      .orderBy("installed_at")
      .orderBy("slug")
      .execute();
    return rows.map((r) => ({ snapshot: json.read<SkillSnapshot>(r.snapshot)!, installedAt: r.installed_at }));
  }

  /** The configuration an agent starts with: its own, with its installed skills joined (spec "Skill"). */
  async function runningConfig(row: HostedAgent): Promise<RunningConfig> {
    const joined = withSkills(
      { instructions: row.instructions, tools: await tools(row.id), capabilities: json.read<string[]>(row.capabilities) ?? [] },
      BUILTIN_TOOLS,
      (await skills(row.id)).map((s) => s.snapshot),
    );
    return {
      displayName: row.display_name,
      instructions: joined.instructions,
      model: { baseUrl: row.model_base_url, name: row.model_name },
      capabilities: joined.capabilities,
      minReward: row.min_reward === null ? null : asRawAmount(row.min_reward),
      tools: joined.tools,
      subtaskMaxReward: row.subtask_max_reward,
    };
  }

  /**
   * Moves the agent to `to` only from one of the states `from`, in one statement: of two racing transitions one wins
   * (true) and the other changes nothing (false). A `withdrawing` state not renewed for `holdLapseMs` (its process
   * ended mid-hold) counts as `stopped`.
   */
  async function transition(
    id: number,
    from: readonly HostedAgent["state"][],
    to: HostedAgent["state"],
    fields: Partial<Pick<HostedAgent, "running_config" | "last_error">> = {},
  ): Promise<boolean> {
    const at = now();
    const move = (trx: Transaction<Database>, states: readonly HostedAgent["state"][]) =>
      trx
        .updateTable("hosted_agents")
        .set({ ...fields, state: to, updated_at: at })
        .where("id", "=", id)
        .where((eb) =>
          eb.or([
            eb("state", "in", [...states]),
            ...(states.includes("stopped") ? [eb.and([eb("state", "=", "withdrawing"), eb("updated_at", "<", at - holdLapseMs)])] : []),
          ]),
        )
        .returning(["address", "owner_address"])
        .executeTakeFirst();
    return db.transaction().execute(async (trx) => {
      // The row first (an update to itself holds its lock to the end): the two moves below then see one state, not a
      // start or delete committing between them (PostgreSQL reads each statement afresh).
      await trx
        .updateTable("hosted_agents")
        .set((eb) => ({ updated_at: eb.ref("updated_at") }))
        .where("id", "=", id)
        .execute();
      // From `running` first, on its own: whether the agent was running decides its `agent.stopped` event.
      const wasRunning = to !== "running" && from.includes("running") ? await move(trx, ["running"]) : undefined;
      const others = from.filter((state) => to === "running" || state !== "running");
      const moved = wasRunning ?? (others.length > 0 ? await move(trx, others) : undefined);
      if (!moved) return false;
      const chain = eventChain?.();
      if (chain && (to === "running" || wasRunning)) {
        const cause = to === "deleted" ? "deleted" : fields.last_error ? "failed" : "stopped";
        await appendEvents(
          trx,
          chain,
          [
            {
              type: to === "running" ? "agent.started" : "agent.stopped",
              taskHash: null,
              public: false,
              audience: [moved.owner_address, moved.address],
              data: { agentId: id, address: moved.address, ...(to === "running" ? {} : { cause }) },
            },
          ],
          at,
        );
      }
      return true;
    });
  }

  async function setState(id: number, fields: Partial<Pick<HostedAgent, "running_config" | "last_error" | "exported_at">>) {
    await db
      .updateTable("hosted_agents")
      .set({ ...fields, updated_at: now() })
      .where("id", "=", id)
      .execute();
  }

  function publicView(row: HostedAgent, toolList: StoredTool[]): HostedAgentView {
    return {
      id: row.id,
      address: asAddress(row.address),
      displayName: row.display_name,
      state: row.state === "running" ? "running" : "stopped",
      capabilities: json.read<string[]>(row.capabilities) ?? [],
      minReward: row.min_reward === null ? null : asRawAmount(row.min_reward),
      model: { name: row.model_name },
      tools: toolList.map(publicTool),
      builtinTools: BUILTIN_TOOLS.filter((t) => t !== "delegate_to_agent" || row.subtask_max_reward !== null),
      subtasks: {
        enabled: row.subtask_max_reward !== null,
        maxRewardRaw: row.subtask_max_reward === null ? null : asRawAmount(row.subtask_max_reward),
      },
      createdAt: row.created_at,
    };
  }

  async function ownedView(row: HostedAgent): Promise<OwnedAgentView> {
    const secrets = await db
      .selectFrom("hosted_agent_secrets")
      .select(["kind", "name"])
      .where("agent_id", "=", row.id)
      .orderBy("kind")
      .orderBy("name")
      .execute();
    const exports = await db
      .selectFrom("key_exports")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("agent_id", "=", row.id)
      .executeTakeFirstOrThrow();
    return {
      ...publicView(row, await tools(row.id)),
      ownerAddress: asAddress(row.owner_address),
      ownerPublicKey: row.owner_public_key,
      instructions: row.instructions,
      modelBaseUrl: row.model_base_url,
      secrets: secrets.map((s) => ({ kind: s.kind, name: s.name })),
      exportedAt: row.exported_at,
      exports: Number(exports.n),
      lastError: row.last_error,
      skills: (await skills(row.id)).map((s) => installedView(s.snapshot, s.installedAt)),
    };
  }

  /** Hosted agents for the public listing, newest first. */
  async function list(limit: number): Promise<HostedAgentView[]> {
    const rows = await db.selectFrom("hosted_agents").selectAll().where("state", "!=", "deleted").orderBy("id", "desc").limit(limit).execute();
    if (rows.length === 0) return [];
    const toolRows = await db
      .selectFrom("hosted_agent_tools")
      .select(["agent_id", "definition"])
      .where(
        "agent_id",
        "in",
        rows.map((r) => r.id),
      )
      .orderBy("name")
      .execute();
    const byAgent = new Map<number, StoredTool[]>();
    for (const t of toolRows) byAgent.set(t.agent_id, [...(byAgent.get(t.agent_id) ?? []), json.read<StoredTool>(t.definition)!]);
    return rows.map((row) => publicView(row, byAgent.get(row.id) ?? []));
  }

  /**
   * A custodied record of the agent's sealed under the master key, bound to `context` (issue 23: the task file of an
   * owner's /mcp spend, private briefs included, in hosted_mcp_runs).
   */
  function sealRecord(text: string, context: string): string {
    return requireVault().seal(text, context);
  }

  /** Opens what `sealRecord` sealed; a record saved before sealing began (not `v1.`-sealed) is returned as it is. */
  function openRecord(stored: string, context: string): string {
    return stored.startsWith("v1.") ? requireVault().open(stored, context) : stored;
  }

  return {
    sealRecord,
    openRecord,
    storeSecrets,
    openSecrets,
    openWalletKey,
    openToolSecrets,
    ownerCopy,
    find,
    requireOwned,
    tools,
    skills,
    runningConfig,
    setState,
    transition,
    publicView,
    ownedView,
    list,
  };
}

/** A tool as the public sees it: the headers it sends with their values masked, never a secret. */
export function publicTool(tool: StoredTool): PublicTool {
  // A sandbox tool's code and command are its owner's: the public sees its type, name and description.
  if (isSandboxTool(tool)) return { type: tool.type, name: tool.name, description: tool.description, method: "", url: "", headers: {} };
  const headers: Record<string, string> = {};
  const auth = tool.auth;
  if (auth?.type === "bearer") headers.Authorization = `Bearer ${MASK}`;
  if (auth?.type === "header") headers[auth.keyName ?? "Authorization"] = MASK;
  const view = { name: tool.name, url: tool.url, headers };
  if (tool.type === "mcp") return { type: "mcp", ...view, description: tool.description ?? "", method: "MCP", tools: tool.listed.map((t) => t.name) };
  if (tool.type === "mcp_manual") return { type: "mcp_manual", ...view, description: tool.description, method: "POST" };
  return { type: "http", ...view, description: tool.description, method: tool.method };
}

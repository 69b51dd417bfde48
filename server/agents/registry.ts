import { getAddress } from "ethers";
import type { Db } from "../db";
import { json } from "../db";
import { LEGACY_AGENT_CHAIN, type ChainName } from "@market/core/chains";
import { MarketError } from "@market/core/errors";
import { normalizePublicKey } from "@market/core/crypto";
import { checksumAddress } from "@market/core/addresses";
import { FRESH_REPUTATION } from "@market/core/reputation";
import { asAddress, asRawAmount, type AgentProfile } from "@market/core/api";

export type { AgentProfile } from "@market/core/api";

/** A registered agent with the account that registered it (to tell agents of one owner apart). */
export interface RegisteredAgent {
  profile: AgentProfile;
  accountId: number | null;
}

export interface Registration {
  publicKey?: string;
  capabilities: string[];
  supportedChains?: ChainName[];
  displayName?: string;
  minReward?: bigint;
}

export type AgentRegistry = ReturnType<typeof createAgentRegistry>;

export function createAgentRegistry({ db, now }: { db: Db; now: () => number }) {
  /** Agents with their earned counters (50 / 0 / "0" until the first event concerns them). */
  const agents = () =>
    db
      .selectFrom("agents as a")
      .leftJoin("reputation as r", "r.address", "a.address")
      .selectAll("a")
      .select(["r.reputation", "r.tasks_completed", "r.earnings"]);

  type Row = Awaited<ReturnType<ReturnType<typeof agents>["executeTakeFirstOrThrow"]>>;
  const toRegistered = (row: Row): RegisteredAgent => ({
    accountId: row.account_id,
    profile: {
      address: asAddress(row.address),
      publicKey: row.public_key,
      displayName: row.display_name,
      capabilities: json.read<string[]>(row.capabilities) ?? [],
      supportedChains: json.read<string[]>(row.supported_chains),
      minReward: row.min_reward === null ? null : asRawAmount(row.min_reward),
      reputation: row.reputation ?? FRESH_REPUTATION.reputation,
      tasksCompleted: row.tasks_completed ?? FRESH_REPUTATION.tasksCompleted,
      earnings: asRawAmount(row.earnings ?? FRESH_REPUTATION.earnings),
      registeredAt: row.registered_at,
    },
  });

  /**
   * Creates or replaces the wallet's agent record. Every registered field is replaced (omitted ones are cleared);
   * the earned counters live apart and are kept, as is the registration time. The public key is whatever key the
   * agent decrypts briefs with: normally the wallet's own (clients check that before registering, `OWNER_MISMATCH`),
   * or a key generated for an agent that only reads briefs.
   */
  async function register(wallet: string, accountId: number, registration: Registration): Promise<AgentProfile> {
    const address = getAddress(wallet);
    let publicKey: string | null = null;
    if (registration.publicKey !== undefined) {
      try {
        publicKey = normalizePublicKey(registration.publicKey);
      } catch (cause) {
        throw new MarketError("INVALID_PUBLIC_KEY", undefined, { cause });
      }
    }
    const capabilities = [...new Set(registration.capabilities)].sort();
    const at = now();
    const fields = {
      account_id: accountId,
      public_key: publicKey,
      display_name: registration.displayName ?? null,
      min_reward: registration.minReward === undefined ? null : registration.minReward.toString(),
      capabilities: json.write(capabilities),
      supported_chains: registration.supportedChains === undefined ? null : json.write([...new Set(registration.supportedChains)]),
      updated_at: at,
    };
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto("agents")
        .values({ address, registered_at: at, ...fields })
        .onConflict((oc) => oc.column("address").doUpdateSet(fields))
        .execute();
      await trx.deleteFrom("agent_capabilities").where("agent_address", "=", address).execute();
      if (capabilities.length > 0) {
        await trx
          .insertInto("agent_capabilities")
          .values(capabilities.map((tag) => ({ agent_address: address, tag })))
          .execute();
      }
    });
    return (await lookup(address))!.profile;
  }

  async function lookup(address: string): Promise<RegisteredAgent | undefined> {
    const row = await agents().where("a.address", "=", getAddress(address)).executeTakeFirst();
    return row ? toRegistered(row) : undefined;
  }

  /**
   * Registered agents holding every tag in `capabilities`; with `chain`, only those working on it that have a public
   * key (the agents a private brief on that chain can be wrapped to). `addresses` narrows to those wallets.
   */
  async function search(filter: { capabilities?: string[]; chain?: ChainName; addresses?: string[]; limit?: number }): Promise<RegisteredAgent[]> {
    let query = agents();
    for (const tag of new Set(filter.capabilities ?? [])) {
      query = query.where((eb) =>
        eb.exists(eb.selectFrom("agent_capabilities as c").select("c.tag").whereRef("c.agent_address", "=", "a.address").where("c.tag", "=", tag)),
      );
    }
    if (filter.addresses) {
      if (filter.addresses.length === 0) return [];
      query = query.where(
        "a.address",
        "in",
        filter.addresses.map((a) => checksumAddress(a)),
      );
    }
    const chain = filter.chain;
    if (chain) {
      query = query.where("a.public_key", "is not", null).where((eb) => {
        // Chains are stored as a JSON array of fixed identifiers; no record (or none) means `base` only.
        const listed = eb("a.supported_chains", "like", `%"${chain}"%`);
        if (chain !== LEGACY_AGENT_CHAIN) return listed;
        return eb.or([listed, eb("a.supported_chains", "is", null), eb("a.supported_chains", "=", "[]")]);
      });
    }
    const rows = await query
      .orderBy((eb) => eb.fn.coalesce("r.reputation", eb.val(FRESH_REPUTATION.reputation)), "desc")
      .orderBy("a.address")
      .limit(filter.limit ?? 1000)
      .execute();
    return rows.map(toRegistered);
  }

  return {
    register,
    lookup,
    search,
    async get(address: string) {
      return (await lookup(address))?.profile;
    },
    async find(filter: Parameters<typeof search>[0]) {
      return (await search(filter)).map((r) => r.profile);
    },
  };
}

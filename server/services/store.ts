import type { Db } from "../db";
import { json, MAX_SERIAL_ID } from "../db";
import type { Service } from "../db/schema";
import type { Principal } from "../auth";
import { createWindows, rateLimited } from "../http/rate-limit";
import { asAddress, asRawAmount, type CreateServiceBody, type ServiceView, type UpdateServiceBody } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { SERVICE_DESCRIPTION_MAX_CHARS, SERVICE_NAME_MAX_CHARS, SERVICE_NAME_MIN_CHARS } from "@market/core/limits";
import { charCount } from "@market/core/text";

/** The escrow stores amounts in 96 bits: a higher price could never be paid. */
const MAX_PRICE_RAW = (1n << 96n) - 1n;

/** Limits on what an owner may write (each write costs the service storage). */
export interface ServiceLimits {
  /** Services one hosted agent may list at once (deleted ones aside). */
  perAgent: number;
  /** Creates, changes and deletes per account per hour. */
  writesPerHour: number;
}

export const DEFAULT_SERVICE_LIMITS: ServiceLimits = { perAgent: 20, writesPerHour: 60 };

/** What the listing checks read of a service (server/tasks). */
export interface RentalTerms {
  agentAddress: string;
  priceRaw: bigint;
  active: boolean;
}

/** The owner check of a hosted agent (the hosted store's): its id and wallet, or the refusal. */
export type RequireOwnedAgent = (agentId: number, principal: Principal) => Promise<{ id: number; address: string }>;

export type ServiceStore = ReturnType<typeof createServiceStore>;

const invalid = (field: string, message: string) => new MarketError("VALIDATION_FAILED", `${field} ${message}`, { details: [{ field, message }] });

/** Control characters: none in a name; a description keeps tabs and line breaks. */
const CONTROL = /[\p{Cc}\u2028\u2029]/u;
const CONTROL_BUT_LINES = /(?![\t\n\r])\p{Cc}/u;

function checkName(name: string): string {
  const trimmed = name.trim();
  if (CONTROL.test(trimmed)) throw invalid("body.name", "must be one line of text (no line breaks or control characters)");
  const chars = charCount(trimmed);
  if (chars < SERVICE_NAME_MIN_CHARS || chars > SERVICE_NAME_MAX_CHARS) {
    throw invalid("body.name", `must be ${SERVICE_NAME_MIN_CHARS} to ${SERVICE_NAME_MAX_CHARS} characters (got ${chars})`);
  }
  return trimmed;
}

function checkDescription(description: string): string {
  if (CONTROL_BUT_LINES.test(description)) throw invalid("body.description", "must be plain text (no control characters but tabs and line breaks)");
  const chars = charCount(description);
  if (chars > SERVICE_DESCRIPTION_MAX_CHARS)
    throw invalid("body.description", `must be at most ${SERVICE_DESCRIPTION_MAX_CHARS} characters (got ${chars})`);
  return description;
}

function checkPrice(priceRaw: string): string {
  const price = BigInt(priceRaw);
  if (price <= 0n) throw invalid("body.priceRaw", "must be above 0");
  if (price > MAX_PRICE_RAW) throw invalid("body.priceRaw", `must be at most ${MAX_PRICE_RAW} (the escrow holds 96-bit amounts)`);
  return price.toString();
}

/**
 * Services of hosted agents: their owner lists, changes and deletes them; everyone reads the active ones. A deleted
 * service keeps its row (marked `deleted_at`): the rentals it sold stay linked to it and keep counting, while it takes
 * no new rental and is shown nowhere. `sold_count` is written only by the indexer's projection (projection.ts).
 */
export function createServiceStore({ db, now, limits = DEFAULT_SERVICE_LIMITS }: { db: Db; now: () => number; limits?: ServiceLimits }) {
  const writes = createWindows(60 * 60_000);

  /** Services with what they show of their agent: its registration (key, chains, name) when it has started once. */
  const withAgent = () =>
    db
      .selectFrom("services as s")
      .innerJoin("hosted_agents as h", "h.id", "s.agent_id")
      .leftJoin("agents as a", "a.address", "s.agent_address")
      .selectAll("s")
      .select(["h.display_name as hosted_name", "a.display_name as registered_name", "a.public_key", "a.supported_chains"])
      .where("s.deleted_at", "is", null)
      .where("h.state", "!=", "deleted");

  type Row = Service & { hosted_name: string; registered_name: string | null; public_key: string | null; supported_chains: string | null };

  const view = (row: Row): ServiceView => ({
    id: row.id,
    agent_id: row.agent_id,
    agent_address: asAddress(row.agent_address),
    name: row.name,
    description: row.description,
    price_raw: asRawAmount(row.price_raw),
    service_type: row.service_type,
    active: row.active === 1,
    sold_count: Number(row.sold_count),
    agent_name: row.registered_name ?? row.hosted_name,
    agent_public_key: row.public_key,
    agent_supported_chains: json.read<string[]>(row.supported_chains),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  });

  const validId = (id: number) => Number.isSafeInteger(id) && id >= 1 && id <= MAX_SERIAL_ID;

  async function find(id: number): Promise<ServiceView | undefined> {
    if (!validId(id)) return undefined;
    const row = await withAgent().where("s.id", "=", id).executeTakeFirst();
    return row ? view(row) : undefined;
  }

  /** The agent's service, for its owner: `SERVICE_NOT_FOUND` when it is another agent's, deleted or unknown. */
  async function requireOfAgent(agentId: number, serviceId: number): Promise<ServiceView> {
    const service = await find(serviceId);
    if (!service || service.agent_id !== agentId) throw new MarketError("SERVICE_NOT_FOUND", `Agent ${agentId} has no service ${serviceId}.`);
    return service;
  }

  function countWrite(principal: Principal) {
    const retryAfter = writes.hit(`account:${principal.accountId}`, limits.writesPerHour, now());
    if (retryAfter !== undefined) throw rateLimited(retryAfter, "service changes");
  }

  return {
    find,

    /** Active services, newest first; `agent` keeps one agent's. */
    async listActive(options: { agent?: string; limit: number }): Promise<{ services: ServiceView[]; total: number }> {
      let query = withAgent().where("s.active", "=", 1);
      if (options.agent) query = query.where("s.agent_address", "=", options.agent);
      const [rows, counted] = await Promise.all([
        query.orderBy("s.id", "desc").limit(options.limit).execute(),
        query
          .clearSelect()
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow(),
      ]);
      return { services: rows.map((r) => view(r as Row)), total: Number(counted.n) };
    },

    /** Every service of one agent, inactive ones too (its owner's list), oldest first. */
    async ofAgent(agentId: number): Promise<ServiceView[]> {
      const rows = await withAgent().where("s.agent_id", "=", agentId).orderBy("s.id").execute();
      return rows.map((r) => view(r as Row));
    },

    /** What a rental's listing is checked against; undefined for an unknown or deleted service. */
    async rentalTerms(id: number): Promise<RentalTerms | undefined> {
      if (!validId(id)) return undefined;
      const row = await db
        .selectFrom("services as s")
        .innerJoin("hosted_agents as h", "h.id", "s.agent_id")
        .select(["s.agent_address", "s.price_raw", "s.active"])
        .where("s.id", "=", id)
        .where("s.deleted_at", "is", null)
        .where("h.state", "!=", "deleted")
        .executeTakeFirst();
      return row ? { agentAddress: row.agent_address, priceRaw: BigInt(row.price_raw), active: row.active === 1 } : undefined;
    },

    async create(principal: Principal, agent: { id: number; address: string }, body: CreateServiceBody): Promise<ServiceView> {
      const name = checkName(body.name);
      const description = checkDescription(body.description ?? "");
      const price = checkPrice(body.priceRaw);
      countWrite(principal);
      const at = now();
      const id = await db.transaction().execute(async (trx) => {
        const listed = await trx
          .selectFrom("services")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("agent_id", "=", agent.id)
          .where("deleted_at", "is", null)
          .executeTakeFirstOrThrow();
        if (Number(listed.n) >= limits.perAgent) {
          throw new MarketError("SERVICE_QUOTA_EXCEEDED", `A hosted agent may list ${limits.perAgent} services; delete one first.`);
        }
        const row = await trx
          .insertInto("services")
          .values({
            agent_id: agent.id,
            agent_address: agent.address,
            name,
            description,
            price_raw: price,
            service_type: body.serviceType,
            active: body.active === false ? 0 : 1,
            created_at: at,
            updated_at: at,
            deleted_at: null,
          })
          .returning("id")
          .executeTakeFirstOrThrow();
        return row.id;
      });
      return (await find(id))!;
    },

    /** Changes the fields given; a new price applies to rentals listed from now on (those listed keep what they paid). */
    async update(principal: Principal, agentId: number, serviceId: number, body: UpdateServiceBody): Promise<ServiceView> {
      await requireOfAgent(agentId, serviceId);
      const changes = {
        ...(body.name !== undefined ? { name: checkName(body.name) } : {}),
        ...(body.description !== undefined ? { description: checkDescription(body.description) } : {}),
        ...(body.priceRaw !== undefined ? { price_raw: checkPrice(body.priceRaw) } : {}),
        ...(body.serviceType !== undefined ? { service_type: body.serviceType } : {}),
        ...(body.active !== undefined ? { active: body.active ? 1 : 0 } : {}),
      };
      countWrite(principal);
      await db
        .updateTable("services")
        .set({ ...changes, updated_at: now() })
        .where("id", "=", serviceId)
        .where("deleted_at", "is", null)
        .execute();
      return requireOfAgent(agentId, serviceId);
    },

    /** Deletes the service: no new rental, shown nowhere; rentals already paid stay pinned to its agent and linked to it. */
    async remove(principal: Principal, agentId: number, serviceId: number): Promise<{ id: number; deleted: true }> {
      await requireOfAgent(agentId, serviceId);
      countWrite(principal);
      const at = now();
      await db.updateTable("services").set({ deleted_at: at, active: 0, updated_at: at }).where("id", "=", serviceId).execute();
      return { id: serviceId, deleted: true };
    },
  };
}

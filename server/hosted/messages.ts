/**
 * The conversation between an owner and its hosted agent (issue 23 item 8): a quota per sender, a retention rule, and
 * deletion with the agent. Each side sends at most `MESSAGES_PER_DAY` messages in any 24 hours
 * (`MESSAGE_QUOTA_EXCEEDED` past it, nothing stored); a conversation keeps its latest `MESSAGES_KEPT` messages, none
 * older than `MESSAGE_RETENTION_MS` (older ones are removed as new ones arrive); an agent's messages go when it is
 * deleted.
 */
import type { Transaction } from "kysely";
import type { Database, Db } from "../db";
import { MarketError } from "@market/core/errors";

/** Messages one side (the owner, or the agent) may send in any 24 hours. */
export const MESSAGES_PER_DAY = 100;
/** Messages a conversation keeps (and shows). */
export const MESSAGES_KEPT = 200;
/** Age past which a message is removed. */
export const MESSAGE_RETENTION_MS = 30 * 24 * 60 * 60_000;
const DAY_MS = 24 * 60 * 60_000;

/** Stores one message within the sender's quota and trims the conversation to what is kept; its id. */
export async function appendMessage(db: Db, agentId: number, sender: "owner" | "agent", body: string, at: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    // The agent's row is locked first (a no-op update; SQLite has one writer at a time): sends count one at a time.
    await trx
      .updateTable("hosted_agents")
      .set((eb) => ({ updated_at: eb.ref("updated_at") }))
      .where("id", "=", agentId)
      .execute();
    const sent = await trx
      .selectFrom("hosted_agent_messages")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("agent_id", "=", agentId)
      .where("sender", "=", sender)
      .where("created_at", ">", at - DAY_MS)
      .executeTakeFirstOrThrow();
    if (Number(sent.n) >= MESSAGES_PER_DAY)
      throw new MarketError("MESSAGE_QUOTA_EXCEEDED", `The ${sender} has sent ${MESSAGES_PER_DAY} messages in the last 24 hours; retry later.`);
    const row = await trx
      .insertInto("hosted_agent_messages")
      .values({ agent_id: agentId, sender, body, created_at: at })
      .returning("id")
      .executeTakeFirstOrThrow();
    await trx
      .deleteFrom("hosted_agent_messages")
      .where("agent_id", "=", agentId)
      .where("created_at", "<", at - MESSAGE_RETENTION_MS)
      .execute();
    const oldestDropped = await trx
      .selectFrom("hosted_agent_messages")
      .select("id")
      .where("agent_id", "=", agentId)
      .orderBy("id", "desc")
      .offset(MESSAGES_KEPT)
      .limit(1)
      .executeTakeFirst();
    if (oldestDropped) await trx.deleteFrom("hosted_agent_messages").where("agent_id", "=", agentId).where("id", "<=", oldestDropped.id).execute();
    return row.id;
  });
}

/** Every message of the agent removed (it is deleted). */
export async function forgetMessages(trx: Transaction<Database>, agentId: number): Promise<void> {
  await trx.deleteFrom("hosted_agent_messages").where("agent_id", "=", agentId).execute();
}

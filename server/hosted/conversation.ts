/** Messages between a hosted agent's owner and the agent (server/hosted/service.ts binds the operations). */
import type { Principal } from "../auth";
import type { AgentMessage } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { appendMessage, MESSAGE_RETENTION_MS, MESSAGES_KEPT } from "./messages";
import type { HostedAgentsDeps } from "./agent-deps";

export function createConversation(deps: Pick<HostedAgentsDeps, "db" | "store" | "now">) {
  const { db, store, now } = deps;

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

  return { sendMessage, messages };
}

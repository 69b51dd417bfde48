import { randomBytes } from "node:crypto";
import type { Db } from "../db";
import { MarketError } from "@market/core/errors";
import type { Clock } from "../http/types";
import { sha256Hex } from "./api-keys";
import type { Principal } from "./principal";

/** Tokens of running hosted agents (docs/hosted-agents.md); issued to the runner, sent as `X-API-Key`. */
export const HOSTED_TOKEN_PREFIX = "ha_";

export type AgentTokens = ReturnType<typeof createAgentTokens>;

/**
 * A running hosted agent's own credential: one token per run, held in the runner's memory and stored as a SHA-256
 * hash, acting as the agent's wallet in its owner's account. It works tasks; it never manages the account
 * (`signedIn` refuses it).
 *
 * A token can also be lent for one request of the owner's (`lend`: the remote MCP endpoint acting as a custodied
 * wallet): kept in this process's memory only, as its hash, valid whether the agent runs or not (never once it is
 * deleted) until the request ends it. It never leaves the process: the request calls this API in-process with it.
 */
export function createAgentTokens({ db, now }: { db: Db; now: Clock }) {
  /** Hashes of lent tokens, to their agents. */
  const lent = new Map<string, number>();

  /** The principal of a presented token; `INVALID_TOKEN` when it is wrong or its agent is not running (or deleted, for a lent one). */
  async function principalOf(token: string): Promise<Principal> {
    const lentTo = lent.get(sha256Hex(token));
    if (lentTo !== undefined) {
      const agent = await db.selectFrom("hosted_agents").select(["id", "address", "account_id", "state"]).where("id", "=", lentTo).executeTakeFirst();
      if (!agent || agent.state === "deleted") throw new MarketError("INVALID_TOKEN", "The hosted agent was deleted.");
      return { kind: "hostedAgent", accountId: agent.account_id, wallet: agent.address, hostedAgentId: agent.id };
    }
    const row = await db
      .selectFrom("hosted_agent_tokens as t")
      .innerJoin("hosted_agents as h", "h.id", "t.agent_id")
      .select(["h.id", "h.address", "h.account_id", "h.state"])
      .where("t.token_hash", "=", sha256Hex(token))
      .executeTakeFirst();
    if (!row || row.state !== "running") throw new MarketError("INVALID_TOKEN", "The hosted agent's token is wrong or its agent stopped.");
    return { kind: "hostedAgent", accountId: row.account_id, wallet: row.address, hostedAgentId: row.id };
  }

  /** A new token for the agent's run, replacing any earlier one; returned once. */
  async function issue(agentId: number): Promise<string> {
    const token = `${HOSTED_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
    await db.transaction().execute(async (trx) => {
      await trx.deleteFrom("hosted_agent_tokens").where("agent_id", "=", agentId).execute();
      await trx
        .insertInto("hosted_agent_tokens")
        .values({ token_hash: sha256Hex(token), agent_id: agentId, created_at: now() })
        .execute();
    });
    return token;
  }

  /** Ends the agent's token (its run stopped). */
  async function revoke(agentId: number): Promise<void> {
    await db.deleteFrom("hosted_agent_tokens").where("agent_id", "=", agentId).execute();
  }

  /** A token acting as the agent's wallet until `end()` (one request of its owner's); the runner's token is untouched. */
  function lend(agentId: number): { token: string; end(): void } {
    const token = `${HOSTED_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
    const hash = sha256Hex(token);
    lent.set(hash, agentId);
    return { token, end: () => void lent.delete(hash) };
  }

  return { principalOf, issue, revoke, lend };
}

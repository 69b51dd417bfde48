/**
 * The remote MCP endpoint acting as a hosted agent's custodied wallet, for its owner: `X-Market-Agent: <agent id>`
 * with the owner's `sk_` key (anyone else: `NOT_AGENT_OWNER`; no such agent: `HOSTED_AGENT_NOT_FOUND`). The tools
 * then act as the agent's wallet (a token lent for the request, `AgentTokens.lend`) and sign with its custodied key,
 * which never leaves this process and is never shown to the model.
 *
 * What uses the wallet (a spending call, quote included, and cancel or claim) runs with the wallet held
 * (`HostedAgents.holdWallet`): the agent must be stopped (`AGENT_RUNNING`), and no withdrawal or other spend runs
 * meanwhile (`WITHDRAWAL_IN_PROGRESS`), so nothing else signs with its nonce.
 *
 * Posting is `market mcp`'s own: the SDK's journaled engine (`callPoster`, sdk/src/posting/journal), its journal kept
 * in the database (run-journal.ts): each entry is saved before the step it records goes on (the funding's before the
 * transaction is sent), and the next call under the same idempotencyKey, on any API process, starts from them. So a
 * repeat never pays twice.
 */
import type { Db } from "../db";
import type { AgentTokens, Principal } from "../auth";
import type { HostedAgents } from "../hosted";
import type { HostedStore } from "../hosted/store";
import { MarketError } from "@market/core/errors";
import { MarketClient, type MarketClientOptions, type PinnedEscrows, type RpcUrls } from "../../sdk/src";
import { serviceQuotes, type McpSurface } from "../../sdk/src/mcp";
import { callPoster, type Reporter } from "../../sdk/src/posting/journal";
import { databaseCallStores } from "./run-journal";

/** The header naming the hosted agent whose custodied wallet the request acts as. */
export const AGENT_HEADER = "x-market-agent";

export interface CustodyDeps {
  db: Db;
  store: Pick<HostedStore, "requireOwned" | "openWalletKey" | "sealRecord" | "openRecord">;
  agents: Pick<HostedAgents, "holdWallet">;
  tokens: Pick<AgentTokens, "lend">;
  /** The RPCs and pinned escrows the custodied wallet signs through (`Hosting.signing`). */
  signing: () => { rpcUrls: RpcUrls; escrows: PinnedEscrows };
  now: () => number;
}

/** The agent id of `X-Market-Agent`, if sent; `VALIDATION_FAILED` when it is no id. */
export function agentIdOf(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header.join(",") : header;
  if (!/^[1-9][0-9]{0,15}$/.test(value.trim()) || !Number.isSafeInteger(Number(value.trim()))) {
    throw new MarketError("VALIDATION_FAILED", "X-Market-Agent must be the id of one of your hosted agents (a positive integer).", {
      details: [{ field: "headers.x-market-agent", message: "must be a hosted agent's id" }],
    });
  }
  return Number(value.trim());
}

/** Notes of the posting engine, to the request's log (they name task hashes and counts, never a secret). */
function loggedReporter(log: { info(obj: object, msg: string): void }): Reporter {
  return { note: (line) => log.info({ mcp: "custody" }, line), progress: () => ({ update() {}, end() {} }) };
}

/**
 * The tools' surface acting as the owner's hosted agent `agentId`; `end()` when the request ends (the lent token stops
 * working). `fetch` calls this API in-process.
 */
export async function custodySurface(
  deps: CustodyDeps,
  principal: Principal,
  agentId: number,
  options: { fetch: typeof fetch; baseUrl: string; log: { info(obj: object, msg: string): void } },
): Promise<{ surface: McpSurface; end(): void }> {
  const { db } = deps;
  await deps.store.requireOwned(agentId, principal);
  const walletKey = await deps.store.openWalletKey(agentId);
  const { rpcUrls, escrows } = deps.signing();
  const lent = deps.tokens.lend(agentId);
  const clientOptions: MarketClientOptions = {
    apiKey: lent.token,
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    escrows,
    executor: { privateKey: walletKey, rpcUrls },
  };
  const client = new MarketClient(clientOptions);

  /** Whether a hold of the wallet is under way (the journal's lock). */
  let held = false;
  const exclusive = <T>(run: () => Promise<T>): Promise<T> =>
    deps.agents.holdWallet(principal, agentId, "spending from its wallet over MCP", async () => {
      held = true;
      try {
        return await run();
      } finally {
        held = false;
      }
    });

  const poster = callPoster({
    client: () => new MarketClient(clientOptions),
    privateKey: walletKey,
    api: options.baseUrl,
    store: databaseCallStores({
      db,
      agentId,
      now: deps.now,
      held: () => held,
      // The rows' fingerprint holds the briefs, private ones too: sealed at rest like every custodied secret (issue 23).
      sealRows: (text, run) => deps.store.sealRecord(text, `mcp-run:${agentId}:${run}`),
      openRows: (stored, run) => deps.store.openRecord(stored, `mcp-run:${agentId}:${run}`),
    }),
    reporter: loggedReporter(options.log),
  });

  return {
    surface: { client, quotes: serviceQuotes(client.http), poster, signs: true, exclusive },
    end() {
      lent.end();
      client.close();
    },
  };
}

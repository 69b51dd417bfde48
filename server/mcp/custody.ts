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
 * Posting is `market mcp`'s own: the CLI's journaled engine (cli/src/mcp-poster.ts) in a scratch state directory made
 * for the hold and removed after it. The call's task file and journal are saved to the database (hosted_mcp_runs)
 * after the call is opened, before each funding is sent and once it is mined, and at the end; the next call under the
 * same idempotencyKey, on any API process, starts from them. So a repeat never pays twice.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Db } from "../db";
import type { PinnedEscrows, RpcUrls } from "../../sdk/src/chain";
import type { AgentTokens, Principal } from "../auth";
import type { HostedAgents } from "../hosted";
import type { HostedStore } from "../hosted/store";
import { MarketError } from "../../core/errors";
import { MarketClient } from "../../sdk/src/client";
import { serviceQuotes } from "../../sdk/src/mcp/quotes";
import type { Poster } from "../../sdk/src/mcp/post-tasks";
import type { McpSurface } from "../../sdk/src/mcp/tools";
import type { CliConfig } from "../../cli/src/config";
import { journaledPoster, runDirectory, TASK_FILE } from "../../cli/src/mcp-poster";
import { journalPathFor } from "../../cli/src/journal";
import { resultsPathFor } from "../../cli/src/run";
import type { Terminal } from "../../cli/src/terminal";

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
  /** This process's scratch directory; each hold makes its own state directory in it and removes it after. */
  scratchDir: () => string;
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
function loggedTerminal(log: { info(obj: object, msg: string): void }): Terminal {
  const note = (line: string) => log.info({ mcp: "custody" }, line);
  const quiet = { update() {}, end() {} };
  return {
    say: (line = "") => note(line),
    note,
    data() {},
    json: false,
    interactive: false,
    confirm: () => Promise.resolve(false),
    progress: () => quiet,
    status: () => quiet,
  };
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
  const row = await deps.store.requireOwned(agentId, principal);
  const walletKey = await deps.store.openWalletKey(agentId);
  const { rpcUrls, escrows } = deps.signing();
  const lent = deps.tokens.lend(agentId);
  const client = new MarketClient({
    apiKey: lent.token,
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    escrows,
    executor: { privateKey: walletKey, rpcUrls },
  });
  const terminal = loggedTerminal(options.log);

  /** The state directory of the hold under way. */
  let held: { stateDir: string } | undefined;

  const exclusive = <T>(run: () => Promise<T>): Promise<T> =>
    deps.agents.holdWallet(principal, agentId, "spending from its wallet over MCP", async () => {
      const stateDir = mkdtempSync(path.join(deps.scratchDir(), `agent-${agentId}-`));
      held = { stateDir };
      try {
        return await run();
      } finally {
        held = undefined;
        rmSync(stateDir, { recursive: true, force: true });
      }
    });

  const runContext = (run: string) => `mcp-run:${agentId}:${run}`;

  /** The run directory's task file and journal, as saved; none yet: neither file. */
  async function restore(run: string, dir: string): Promise<void> {
    const saved = await db
      .selectFrom("hosted_mcp_runs")
      .select(["tasks", "journal"])
      .where("agent_id", "=", agentId)
      .where("run", "=", run)
      .executeTakeFirst();
    if (!saved) return;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, TASK_FILE);
    writeFileSync(file, deps.store.openRecord(saved.tasks, runContext(run)));
    writeFileSync(journalPathFor(resultsPathFor(file)), saved.journal);
  }

  /** Saves the run's task file and journal, once the journal has an entry (a quote alone saves nothing). */
  async function save(run: string, dir: string): Promise<void> {
    const file = path.join(dir, TASK_FILE);
    const journal = journalPathFor(resultsPathFor(file));
    if (!existsSync(journal)) return;
    // The task file holds the briefs, private ones too: sealed at rest like every custodied secret (issue 23).
    const values = {
      tasks: deps.store.sealRecord(readFileSync(file, "utf8"), runContext(run)),
      journal: readFileSync(journal, "utf8"),
      updated_at: deps.now(),
    };
    await db
      .insertInto("hosted_mcp_runs")
      .values({ agent_id: agentId, run, ...values })
      .onConflict((oc) => oc.columns(["agent_id", "run"]).doUpdateSet(values))
      .execute();
  }

  const poster: Poster = {
    async open(rows, idempotencyKey, openOptions) {
      if (!held) throw new Error("a custodied wallet's posting opened outside its hold");
      const { stateDir } = held;
      const dir = runDirectory(stateDir, row.address, idempotencyKey);
      const run = path.basename(dir);
      await restore(run, dir);
      const config: CliConfig = {
        apiUrl: options.baseUrl,
        stateDir,
        apiKey: lent.token,
        privateKey: walletKey,
        rpcUrls,
        escrows,
        fetch: options.fetch,
      };
      const engine = journaledPoster(config, {
        stateDir,
        terminal,
        // Saved before the funding is sent (and once it is mined): a repeat anywhere knows what may be paid.
        hooks: { afterJournaled: () => save(run, dir) },
      });
      const session = await engine.open(rows, idempotencyKey, openOptions);
      try {
        // Opening checks the journal's claims against the chain and may record what it found.
        await save(run, dir);
      } catch (error) {
        session.close();
        throw error;
      }
      return {
        facts: session.facts,
        async execute() {
          try {
            return await session.execute();
          } finally {
            await save(run, dir);
          }
        },
        close: () => session.close(),
      };
    },
  };

  return {
    surface: { client, quotes: serviceQuotes(client.http), poster, signs: true, exclusive },
    end() {
      lent.end();
      client.close();
    },
  };
}

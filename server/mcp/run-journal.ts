/**
 * The API's adapter of the journaled posting engine (sdk/src/posting/journal): a hosted agent's `post_tasks` call
 * under one idempotencyKey is a row of `hosted_mcp_runs`, keyed by the agent and the call's id (`callId`: a hash of
 * the wallet and the key). `journal` holds the engine's entries as JSON Lines, appended by one statement per entry
 * before the step it records goes on (the funding's entry is in the database before the transaction is sent), so the
 * next call under the same key, on any API process, starts from them; `tasks` holds the fingerprint of the call's
 * rows, sealed at rest (it holds the briefs). The row is made by the call's first entry: a quote alone saves nothing. The lock is the custodied wallet's
 * hold (`HostedAgents.holdWallet`), which every spend of the wallet runs under, on every API process.
 */
import { sql } from "kysely";
import type { Db } from "../db";
import { callId, journalLines, parseJournalLines, type CallStore } from "../../sdk/src/posting/journal";

export interface RunJournalDeps {
  db: Db;
  agentId: number;
  now: () => number;
  /** Whether the call runs inside the wallet's hold (the journal's lock); a journal opened outside it is a bug. */
  held: () => boolean;
  /** Seals the rows' fingerprint for storage (it holds the briefs) and opens it again, per call. */
  sealRows: (text: string, run: string) => string;
  openRows: (stored: string, run: string) => string;
}

/** The call stores of one hosted agent's custodied wallet. */
export function databaseCallStores(deps: RunJournalDeps): (wallet: string, idempotencyKey: string) => CallStore {
  const { db, agentId } = deps;
  return (wallet, idempotencyKey) => {
    const run = callId(wallet, idempotencyKey);
    const name = `the saved post_tasks run ${run} of hosted agent ${agentId}`;
    let fingerprint: string | undefined;
    const saved = () =>
      db.selectFrom("hosted_mcp_runs").select(["tasks", "journal"]).where("agent_id", "=", agentId).where("run", "=", run).executeTakeFirst();
    return {
      name,
      journal: {
        name,
        lock() {
          if (!deps.held()) return Promise.reject(new Error("a custodied wallet's posting opened outside its hold"));
          return Promise.resolve(() => {});
        },
        async read() {
          const row = await saved();
          return row ? parseJournalLines(row.journal, name) : [];
        },
        async append(entries) {
          const text = journalLines(entries);
          const tasks = deps.sealRows(fingerprint ?? "", run);
          await db
            .insertInto("hosted_mcp_runs")
            .values({ agent_id: agentId, run, tasks, journal: text, updated_at: deps.now() })
            .onConflict((oc) =>
              oc.columns(["agent_id", "run"]).doUpdateSet({
                journal: sql<string>`${sql.ref("hosted_mcp_runs.journal")} || ${text}`,
                tasks,
                updated_at: deps.now(),
              }),
            )
            .execute();
        },
      },
      async rows() {
        const row = await saved();
        return row ? deps.openRows(row.tasks, run) : undefined;
      },
      setRows(rows) {
        fingerprint = rows;
        return Promise.resolve();
      },
    };
  };
}

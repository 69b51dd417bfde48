/**
 * A run over a task file, shared by `post-tasks` and `finish-posts`: the journaled engine (sdk/src/posting/journal)
 * over the file's checked rows, with the CLI's adapters (the journal file, the results file, the funded-rows index,
 * the terminal), and the closing lines of a run.
 */
import { MarketClient } from "../../sdk/src/client";
import { ApiError, clientError } from "../../sdk/src/errors";
import { finalRows, openRun, RowStatus, type Run, type RunRow } from "../../sdk/src/posting/journal";
import { clientOptions, publicClientOptions, type CliConfig } from "./config";
import { fileJournal, journalPathFor } from "./journal";
import { resultsFile } from "./results";
import { openFundedIndex } from "./funded-index";
import { loadTaskFile } from "./task-file";
import type { Terminal } from "./terminal";

export function resultsPathFor(file: string, results?: string): string {
  return results ?? `${file}.results.csv`;
}

/**
 * The rows of a task file posted on one chain, with their results file. A run is bound to one chain (its journal
 * records fundings on it), so a file whose rows name several chains (`chain` column) is posted as one run per chain:
 * the run's chain (`--chain`, else the service's first postable one) keeps the results file, another chain gets its own
 * beside it (`<file>.results.0g.csv`, journal `<file>.results.0g.csv.journal.jsonl`).
 */
export interface ChainPart {
  chain: string;
  rows: RunRow[];
  resultsPath: string;
}

/** The task file's rows by chain, the run's chain first (the only part of a file without a `chain` column); no empty part. */
export async function chainParts(file: string, resultsFlag: string | undefined, config: CliConfig, chainFlag?: string): Promise<ChainPart[]> {
  const rows = loadTaskFile(file);
  const client = new MarketClient(publicClientOptions(config));
  const runChain = chainFlag ?? (await client.settlement()).chain;
  const byChain = new Map<string, RunRow[]>([[runChain, []]]);
  for (const row of rows) {
    const chain = row.row.chain ?? runChain;
    byChain.set(chain, [...(byChain.get(chain) ?? []), row]);
  }
  const resultsPath = resultsPathFor(file, resultsFlag);
  const parts = [...byChain]
    .filter(([chain, part]) => part.length > 0 || (chain === runChain && rows.every((r) => r.row.chain === undefined)))
    .map(([chain, part]) => ({ chain, rows: part, resultsPath: chain === runChain ? resultsPath : otherChainPath(resultsPath, chain) }));
  // Every chain checked before any part is posted: a row on a chain the service does not settle on refuses the file.
  for (const part of parts) {
    await client.settlement(part.chain).catch((error: unknown) => {
      throw error instanceof ApiError && error.code === "WRONG_CHAIN"
        ? clientError("WRONG_CHAIN", `${error.message.replace(/\.$/, "")} (${part.rows.length} row(s) of ${file}); nothing was sent.`)
        : error;
    });
  }
  return parts;
}

/** The results file of a task file's rows on a chain other than the run's. */
function otherChainPath(resultsPath: string, chain: string): string {
  return /\.csv$/i.test(resultsPath) ? resultsPath.replace(/(\.csv)$/i, `.${chain}$1`) : `${resultsPath}.${chain}`;
}

/**
 * Opens a run over a task file's rows on one chain: the wallet connected, the journal locked and checked against this
 * chain, escrow and wallet (`JOURNAL_MISMATCH` otherwise: its fundings are not on this chain), the results file started
 * from the journal. `readOnly` (a dry run) locks and writes nothing.
 */
export async function openFileRun(
  file: string,
  part: ChainPart,
  config: CliConfig,
  terminal: Terminal,
  options: { readOnly?: boolean } = {},
): Promise<Run> {
  const client = new MarketClient(clientOptions(config, { signs: true }));
  return openRun({
    file,
    rows: part.rows,
    client,
    chain: part.chain,
    api: config.apiUrl,
    journal: fileJournal(journalPathFor(part.resultsPath)),
    results: resultsFile(part.resultsPath),
    funded: (scope) => openFundedIndex(config.stateDir, scope),
    reporter: terminal,
    ...(options.readOnly ? { readOnly: true } : {}),
  });
}

/**
 * Runs `each` over the parts of a task file in order; with several chains, every part's lines are headed by its chain
 * and the --json answers are gathered into one `{ chains: [...], exitStatus }`. The exit status: 0 when every part's
 * is, else 3 while any part can still be finished by a rerun, else 1.
 */
export async function eachChain(parts: ChainPart[], terminal: Terminal, each: (part: ChainPart, terminal: Terminal) => Promise<number>) {
  if (parts.length === 1) return each(parts[0]!, terminal);
  const answers: unknown[] = [];
  const statuses: number[] = [];
  for (const part of parts) {
    terminal.say(`chain ${part.chain}: ${part.rows.length} row(s)`);
    const partTerminal: Terminal = Object.assign(Object.create(terminal) as Terminal, {
      data: (value: unknown) => answers.push({ chain: part.chain, ...(value as object) }),
    });
    statuses.push(await each(part, partTerminal));
  }
  const status = statuses.every((s) => s === 0) ? 0 : statuses.includes(3) ? 3 : Math.max(...statuses);
  terminal.data({ chains: answers, exitStatus: status });
  return status;
}

/** The closing lines of a run (and its JSON answer with --json); the exit status is the caller's. */
export function summarize(run: Run, exitStatus: number, terminal: Terminal) {
  const { results } = run;
  results.flush();
  const parts = [
    `posted ${results.count(RowStatus.posted)}`,
    `paid, not listed ${results.count(RowStatus.unlisted)}`,
    `failed, nothing paid ${results.count(RowStatus.failed)}`,
    `not started ${results.count(RowStatus.notStarted)}`,
  ];
  terminal.data({
    file: run.file,
    results: results.path,
    journal: run.journal.path,
    exitStatus,
    counts: {
      rows: run.rows.length,
      posted: results.count(RowStatus.posted),
      paidNotListed: results.count(RowStatus.unlisted),
      failedNothingPaid: results.count(RowStatus.failed),
      notStarted: results.count(RowStatus.notStarted),
      final: finalRows(run).length,
    },
    rows: run.rows.map((row) => {
      const o = results.get(row);
      return {
        line: row.line,
        status: o.status,
        amount: row.row.amount.toString(),
        ...(o.taskHash ? { taskHash: o.taskHash } : {}),
        ...(o.txHash ? { txHash: o.txHash } : {}),
        ...(o.error ? { error: o.error } : {}),
      };
    }),
  });
  terminal.say(`${run.rows.length} rows: ${parts.join("; ")}`);
  terminal.say(`results: ${results.path}`);
}

/**
 * How a run ends when rows are left: 3 (`NOT_ALL_POSTED`, rerun the same command) while a rerun can still post some,
 * 1 (`ROWS_NOT_POSTABLE`) when every row left can never be posted, so rerunning forever changes nothing.
 */
export function endOfRun(run: Run, rerun: string): number {
  const left = run.rows.filter((row) => run.results.get(row).status !== RowStatus.posted);
  if (left.length === 0) return 0;
  const final = finalRows(run);
  const why = (row: RunRow) => `line ${row.line}: ${run.results.get(row).error!.code}`;
  if (final.length === left.length) {
    run.reporter.note(
      `error ROWS_NOT_POSTABLE: ${final.length} of ${run.rows.length} rows can never be posted (${final.map(why).join(", ")}); rerunning changes nothing. ` +
        "NOT_OPEN: paid and no longer open on chain (market cancel gets an expired one back); TASK_HASH_IN_USE: that public brief is listed already (change its text).",
    );
    return 1;
  }
  run.reporter.note(
    `error NOT_ALL_POSTED: ${left.length - final.length} of ${run.rows.length} rows are not posted. Rerun the same command to finish them; rows already paid are listed without paying again:\n  ${rerun}`,
  );
  if (final.length > 0) {
    run.reporter.note(`${final.length} other row(s) can never be posted (${final.map(why).join(", ")}); a rerun leaves them as they are.`);
  }
  return 3;
}

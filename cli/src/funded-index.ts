/**
 * Every row this machine funded, per chain, escrow and wallet, by content (the row key of sdk/src/posting/journal/rows.ts: the hash of
 * its fields and which occurrence of identical rows it is), in `<state dir>/funded/<chain id>-<escrow>-<wallet>.jsonl`.
 * A run's own journal lives beside its results file, so a copy of a task file under another name (or a journal moved
 * away) starts with none: this index is what finds the rows such a file would pay for again. Each line is appended
 * and fsync'd before the funding is sent; a claim is believed only once the escrow confirms the task is this wallet's.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync } from "node:fs";
import path from "node:path";
import { homedir } from "node:os";
import type { FundedIndex, FundedRow } from "../../sdk/src/posting/journal";

/** The CLI's funded-rows index (the engine's `FundedIndex` port), and where it is. */
export interface FundedIndexFile extends FundedIndex {
  readonly path: string;
}

/** The CLI's state directory: MARKET_STATE_DIR, else ~/.market. */
export function defaultStateDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return env.MARKET_STATE_DIR?.trim() || path.join(homedir(), ".market");
}

export function openFundedIndex(stateDir: string, scope: { chainId: number; escrow: string; wallet: string }): FundedIndexFile {
  const dir = path.join(stateDir, "funded");
  const file = path.join(dir, `${scope.chainId}-${scope.escrow.toLowerCase()}-${scope.wallet.toLowerCase()}.jsonl`);
  const byKey = new Map<string, FundedRow[]>();
  if (existsSync(file)) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (line.trim() === "") continue;
      try {
        const row = JSON.parse(line) as FundedRow;
        byKey.set(row.key, [...(byKey.get(row.key) ?? []), row]);
      } catch {
        // A torn line (killed mid-write): the funding it was to record was never sent.
      }
    }
  }
  return {
    path: file,
    lookup: (key) => byKey.get(key) ?? [],
    record(rows) {
      if (rows.length === 0) return;
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const at = new Date().toISOString();
      // The task file by its absolute path: a copy elsewhere is named where it was funded from.
      const written = rows.map((r) => ({ ...r, file: path.resolve(r.file), at }));
      appendFileSync(file, written.map((r) => `${JSON.stringify(r)}\n`).join(""), { mode: 0o600 });
      const fd = openSync(file, "r");
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      for (const r of written) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
    },
  };
}

import path from "node:path";
import { lockPidFile } from "../../sdk/src/node";

/** SQLite files this process serves. */
const held = new Set<string>();

/**
 * SQLite serves one API process (docs/scaling.md): its indexer and verifier sender have no leader election, and its
 * limits live in one process. Takes `<file>.lock`, holding this process's pid, or throws naming the process that
 * serves the file; a lock left by a process that died (even by SIGKILL) is taken over. Returns the release (also run at
 * exit).
 */
export function lockSqliteFile(file: string): () => void {
  const resolved = path.resolve(file);
  if (held.has(resolved)) throw new Error(refusal(resolved, process.pid));
  const unlock = lockPidFile(
    `${resolved}.lock`,
    (holder) => new Error(holder === undefined ? `could not lock ${resolved}` : refusal(resolved, holder)),
  );
  held.add(resolved);
  return () => {
    if (held.delete(resolved)) unlock();
  };
}

function refusal(file: string, pid: number): string {
  return `${file} is served by process ${pid}: SQLite serves one API process. To run several, use PostgreSQL (DATABASE_URL; docs/scaling.md).`;
}

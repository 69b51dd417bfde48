import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import path from "node:path";

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
  const lock = `${resolved}.lock`;
  if (held.has(resolved)) throw new Error(refusal(resolved, process.pid));
  mkdirSync(path.dirname(lock), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(resolved);
      const release = () => {
        if (!held.delete(resolved)) return;
        if (lockHolder(lock) === process.pid) rmSync(lock, { force: true });
      };
      process.once("exit", release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = lockHolder(lock);
      if (holder !== undefined && holder !== process.pid && isAlive(holder)) throw new Error(refusal(resolved, holder), { cause: error });
      rmSync(lock, { force: true }); // left by a process that is gone
    }
  }
  throw new Error(`could not lock ${resolved}`);
}

function refusal(file: string, pid: number): string {
  return `${file} is served by process ${pid}: SQLite serves one API process. To run several, use PostgreSQL (DATABASE_URL; docs/scaling.md).`;
}

function lockHolder(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

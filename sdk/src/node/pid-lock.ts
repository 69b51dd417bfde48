import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import path from "node:path";

/**
 * The one lock file of the project (`npm start`'s state folder, a served SQLite file, a CLI run's journal): `file` is
 * created holding this process's pid, or, while another live process holds it, `refuse(holder)` is thrown (`refuse()`
 * when the file could not be taken twice in a row). A lock left by a process that is gone (even by SIGKILL) is taken
 * over. Returns the release, also run at exit; it removes the file only while it still holds this process's pid.
 */
export function lockPidFile(file: string, refuse: (holder?: number) => Error): () => void {
  mkdirSync(path.dirname(file), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      const release = () => {
        process.removeListener("exit", release);
        if (lockHolder(file) === process.pid) rmSync(file, { force: true });
      };
      process.on("exit", release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = lockHolder(file);
      if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
        const refusal = refuse(holder);
        refusal.cause ??= error;
        throw refusal;
      }
      rmSync(file, { force: true }); // left by a process that is gone
    }
  }
  throw refuse();
}

/** The pid a lock file holds, if it holds one. */
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

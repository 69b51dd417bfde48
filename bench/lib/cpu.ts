/** CPU time of the bench's processes, so a figure can say which of them the time went to on a shared machine. */
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** User + system CPU seconds a process has used so far (Linux /proc); undefined where /proc is not readable. */
export function cpuSecondsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at field 3; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** CPU seconds each named process spends between `start()` and `stop()`. */
export function cpuMeter(pids: Record<string, number | undefined>) {
  const start = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSecondsOf(pid)]));
  return {
    stop(): Record<string, number | null> {
      return Object.fromEntries(
        Object.entries(pids).map(([name, pid]) => {
          const before = start[name];
          const after = cpuSecondsOf(pid);
          return [name, before === undefined || after === undefined ? null : Math.round((after - before) * 100) / 100];
        }),
      );
    },
  };
}

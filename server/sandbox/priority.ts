/**
 * How sandbox runs yield the CPU (and the disk) to the server (issue 26, "Load"). Every run starts under
 *   `chrt --idle 0` (SCHED_IDLE), `ionice -c 3` (the idle I/O class) and `nice -n 19`,
 * which its processes inherit. They cannot leave SCHED_IDLE or lower the nice value (RLIMIT_NICE 0 inside the
 * sandbox); they can move themselves to the best-effort I/O class (Linux lets any process), which matters little with
 * a read-only system and a tmpfs scratch.
 *
 * A per-process policy counts only among the processes of one scheduler group. Where the server sits in the root
 * cgroup, the kernel groups each session into an autogroup, and a sandbox's session competes with the API's as an equal
 * group whatever its processes' policy; in a cgroup, the sandboxes' group competes with the server's by the group's own
 * settings. So, where this process may write the CPU controller of its cgroup hierarchy (v1 `cpu`, or v2 with `cpu`
 * delegated), every run also enters one shared cgroup:
 * - `market-sandbox-idle` with `cpu.idle` 1 (Linux 5.15 and later; the default, `SANDBOX_CPU_IDLE`): the group is
 *   SCHED_IDLE as a whole. The server's threads (the API, the indexer, the chain client) preempt a sandbox the moment
 *   they wake, and a busy server leaves sandboxes the idle weight only (3 against a default group's 1024). In a
 *   weighted group a woken server thread may wait for the sandboxes' group to use up its protected slice, or for the
 *   next scheduler tick (4 ms at HZ=250), at each hop of a request (bench/sandbox.ts measures both groups);
 * - or, with `SANDBOX_CPU_IDLE=0` or where the kernel has no `cpu.idle`, `market-sandbox-w<weight>` whose CPU weight is
 *   a fraction of a default group's (`SANDBOX_CPU_WEIGHT`, on the v2 scale 1–10000 where 100 is the default; v1 shares
 *   are that × 10.24): sandboxes progress on a busy server, and the API waits a little longer for the CPU.
 * Processes of a cgroup other than the root one leave autogroups out, and a run cannot leave the cgroup (no /sys in its
 * mount namespace, and an unprivileged user on the host). Where no cgroup is writable, the run goes on with the
 * per-process priorities alone.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface SandboxPriority {
  /** The cgroup every run enters (its `cgroup.procs`), or null when none is writable here. */
  cgroupProcs: string | null;
  /** "v1" or "v2" when a cgroup is used. */
  cgroupVersion: "v1" | "v2" | null;
  /** The group is SCHED_IDLE as a whole (`cpu.idle` 1): the server's threads preempt its runs at once. */
  cpuIdle: boolean;
  /** The group's CPU weight on the v2 scale (100 = a default group), when a weighted cgroup is used (not an idle one). */
  cpuWeight: number | null;
  /** Why no cgroup is used (null when one is). */
  cgroupReason: string | null;
}

/** Default `SANDBOX_CPU_WEIGHT` (used with `SANDBOX_CPU_IDLE=0`): a tenth of a default group, so four burning sandboxes weigh less than one API. */
export const DEFAULT_SANDBOX_CPU_WEIGHT = 10;
/** One cgroup per setting (`market-sandbox-idle`, `market-sandbox-w10`): servers and tests of other settings leave it alone. */
const IDLE_GROUP = "market-sandbox-idle";
const groupName = (weight: number) => `market-sandbox-w${weight}`;

interface Mount {
  dir: string;
  type: string;
  options: string[];
}

function mounts(): Mount[] {
  return readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((line) => line.split(" "))
    .filter((f) => f.length >= 4)
    .map(([, dir, type, options]) => ({ dir: dir!.replace(/\\040/g, " "), type: type!, options: options!.split(",") }));
}

/** This process's cgroup path per hierarchy: "cpu" (v1 line naming the cpu controller) and "" (the v2 line). */
function ownCgroups(): { v1Cpu: string | null; v2: string | null } {
  let v1Cpu: string | null = null;
  let v2: string | null = null;
  for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const [id, controllers, ...rest] = line.split(":");
    if (id === undefined || controllers === undefined || rest.length === 0) continue;
    const where = rest.join(":");
    if (id === "0" && controllers === "") v2 = where;
    else if (controllers.split(",").includes("cpu")) v1Cpu = where;
  }
  return { v1Cpu, v2 };
}

function makeGroup(dir: string) {
  try {
    mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

/** Makes the idle group under `parent` (`cpu.idle` 1); null when this kernel has no `cpu.idle` (before Linux 5.15). */
function idleGroup(parent: string): string | null {
  const dir = path.join(parent, IDLE_GROUP);
  makeGroup(dir);
  if (!existsSync(path.join(dir, "cpu.idle"))) {
    rmdirSync(dir);
    return null;
  }
  if (readFileSync(path.join(dir, "cpu.idle"), "utf8").trim() !== "1") writeFileSync(path.join(dir, "cpu.idle"), "1");
  return dir;
}

/**
 * Finds or makes the sandboxes' cgroup (`market-sandbox-idle` when `cpuIdle` and the kernel has `cpu.idle`, else
 * `market-sandbox-w<weight>`) and sets it up; answers where runs go. Never throws: any failure (no controller, a
 * read-only hierarchy, not allowed) is the reason no cgroup is used.
 */
export function sandboxPriority(cpuWeight = DEFAULT_SANDBOX_CPU_WEIGHT, cpuIdle = true): SandboxPriority {
  const weight = Math.min(10_000, Math.max(1, Math.round(cpuWeight)));
  const none = (reason: string): SandboxPriority => ({
    cgroupProcs: null,
    cgroupVersion: null,
    cpuIdle: false,
    cpuWeight: null,
    cgroupReason: reason,
  });
  const idle = (dir: string, version: "v1" | "v2"): SandboxPriority => ({
    cgroupProcs: path.join(dir, "cgroup.procs"),
    cgroupVersion: version,
    cpuIdle: true,
    cpuWeight: null,
    cgroupReason: null,
  });
  const weighted = (dir: string, version: "v1" | "v2"): SandboxPriority => ({
    cgroupProcs: path.join(dir, "cgroup.procs"),
    cgroupVersion: version,
    cpuIdle: false,
    cpuWeight: weight,
    cgroupReason: null,
  });
  try {
    const all = mounts();
    const own = ownCgroups();
    const v1 = all.find((m) => m.type === "cgroup" && m.options.includes("cpu"));
    if (v1 && own.v1Cpu !== null) {
      // v1: a child of this process's own cpu cgroup, competing with the server's processes inside it.
      const parent = path.join(v1.dir, own.v1Cpu);
      const idleDir = cpuIdle ? idleGroup(parent) : null;
      if (idleDir !== null) return idle(idleDir, "v1");
      const dir = path.join(parent, groupName(weight));
      makeGroup(dir);
      writeFileSync(path.join(dir, "cpu.shares"), String(Math.max(2, Math.round(weight * 10.24))));
      return weighted(dir, "v1");
    }
    const v2 = all.find((m) => m.type === "cgroup2");
    if (v2 && own.v2 !== null) {
      // v2: a sibling of this process's cgroup (a cgroup with processes may not enable controllers for children).
      const parent = path.join(v2.dir, own.v2 === "/" ? "/" : path.dirname(own.v2));
      if (!readFileSync(path.join(parent, "cgroup.controllers"), "utf8").split(/\s+/).includes("cpu"))
        return none(`the cpu controller is not available in ${parent}`);
      const subtree = path.join(parent, "cgroup.subtree_control");
      if (!readFileSync(subtree, "utf8").split(/\s+/).includes("cpu")) writeFileSync(subtree, "+cpu");
      const idleDir = cpuIdle ? idleGroup(parent) : null;
      if (idleDir !== null) return idle(idleDir, "v2");
      const dir = path.join(parent, groupName(weight));
      makeGroup(dir);
      writeFileSync(path.join(dir, "cpu.weight"), String(weight));
      return weighted(dir, "v2");
    }
    return none("no cgroup hierarchy with the cpu controller is mounted");
  } catch (error) {
    return none(`the cpu cgroup is not writable here: ${(error as Error).message}`);
  }
}

/**
 * The programs a run's command goes through before `setpriv`/`bwrap`: the move into the cgroup (a shell writing its
 * own pid, then exec, so that every later process is born inside), SCHED_IDLE, the idle I/O class and nice 19.
 */
export function priorityPrefix(priority: SandboxPriority): string[] {
  const perProcess = ["chrt", "--idle", "0", "ionice", "-c", "3", "nice", "-n", "19"];
  if (priority.cgroupProcs === null || !existsSync(priority.cgroupProcs)) return perProcess;
  return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', priority.cgroupProcs, ...perProcess];
}

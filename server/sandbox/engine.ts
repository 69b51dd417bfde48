/**
 * The sandbox engine (issue 26): runs one command in a fresh, throw-away bubblewrap (`bwrap`) sandbox and answers what
 * it printed, cut at a stated size. What each run gets:
 *
 * - a read-only view of `/usr` (with the `/bin`, `/lib`, `/lib64`, `/sbin` links into it), `/etc/ld.so.cache` and
 *   `/etc/alternatives` (the links Debian's `awk` and others go through), and
 *   nothing else of the host: not the repository, the data folder, `/root`, `/home`, `/work`, the host's `/proc` or
 *   `/tmp`; when Node lives outside `/usr`, its one binary is bound read-only at `/opt/node/bin/node`;
 * - a private tmpfs at `/tmp` (the working directory and `$HOME`, `scratchBytes` large) that disappears with the run;
 * - its own user, PID, IPC, UTS, cgroup and network namespaces (`--unshare-all`): no network at all, not even the
 *   host's loopback (the API, the chain node, PostgreSQL); a new session (no terminal injection), an empty
 *   environment but `PATH`, `HOME` and `LANG`;
 * - resource limits set inside the user namespace (`prlimit`): CPU seconds, data-segment bytes (memory), processes,
 *   open files and file size. RLIMIT_NPROC is counted per user inside the sandbox's own user namespace, but the kernel
 *   ignores it for the host's root user: a server running as root drops to `sandboxUid` (`setpriv`) before `bwrap`;
 * - SCHED_IDLE, the idle I/O class and `nice 19`, which no process of the run can undo (RLIMIT_NICE 0), and, where the
 *   cpu cgroup is writable, a shared cgroup that is SCHED_IDLE as a group, or of low CPU weight (priority.ts): the API
 *   and the indexer get the CPU first (bench/sandbox.json measures it);
 * - a wall-clock timeout (or an abort) that kills the sandbox's PID 1, whose pid bwrap tells on `--info-fd` before
 *   the run's command can start, and with it the kernel kills every process of its PID namespace (nothing outlives
 *   the run); then `bwrap`. `--die-with-parent` is the backstop should the server itself die;
 * - stdout read up to `maxOutputBytes` (stderr up to `maxStderrBytes`): past that the run is killed, never buffered.
 */
import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { realpathSync, existsSync } from "node:fs";
import { priorityPrefix, sandboxPriority, type SandboxPriority } from "./priority";

export interface SandboxLimits {
  /** Wall-clock time of one run (ms). */
  timeoutMs: number;
  /** RLIMIT_CPU of each process (seconds). */
  cpuSeconds: number;
  /** RLIMIT_DATA of each process (bytes): the heap and private mappings. */
  memoryBytes: number;
  /** RLIMIT_NPROC inside the sandbox's user namespace (processes and threads). */
  processes: number;
  /** RLIMIT_NOFILE. */
  openFiles: number;
  /** RLIMIT_FSIZE: the largest file a run may write (bytes). */
  fileBytes: number;
  /** Size of the tmpfs scratch folder (bytes). */
  scratchBytes: number;
  /** stdout kept (bytes); more kills the run. */
  maxOutputBytes: number;
  /** stderr kept (bytes); more is dropped. */
  maxStderrBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  timeoutMs: 30_000,
  cpuSeconds: 30,
  memoryBytes: 256 * 1024 * 1024,
  processes: 32,
  openFiles: 64,
  fileBytes: 16 * 1024 * 1024,
  scratchBytes: 64 * 1024 * 1024,
  maxOutputBytes: 64 * 1024,
  maxStderrBytes: 8 * 1024,
};

export interface SandboxRun {
  /** The program and its arguments, run inside the sandbox (no shell unless the program is one). */
  argv: string[];
  /** Written to the program's stdin, then closed. */
  stdin?: string;
  limits: SandboxLimits;
  signal?: AbortSignal;
}

export interface SandboxResult {
  /** The exit status; null when the run was killed (`killed` says why) or died of a signal. */
  exitCode: number | null;
  /** The signal that ended the program, e.g. SIGXCPU, SIGKILL. */
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Why the engine killed the run. */
  killed: "timeout" | "output" | "aborted" | null;
  /** stdout went past `maxOutputBytes` (cut there). */
  outputCut: boolean;
  wallMs: number;
}

export interface SandboxEngineOptions {
  /** The bwrap binary (default: `bwrap` on PATH). */
  bwrap?: string;
  /** Uid and gid the sandbox runs as when the server runs as root (default 65534, nobody). */
  sandboxUid?: number;
  /** CPU weight of the sandboxes' cgroup, v2 scale, when it is not an idle one (priority.ts; default DEFAULT_SANDBOX_CPU_WEIGHT). */
  cpuWeight?: number;
  /** Runs share a SCHED_IDLE cgroup (`cpu.idle` 1) where the kernel has one (priority.ts; default true). */
  cpuIdle?: boolean;
}

function nodeBinds(): string[] {
  const real = realpathSync(process.execPath);
  if (real.startsWith("/usr/")) return [];
  return ["--ro-bind", real, "/opt/node/bin/node"];
}

/** The path of Node inside the sandbox. */
export function sandboxNodePath(): string {
  const real = realpathSync(process.execPath);
  return real.startsWith("/usr/") ? real : "/opt/node/bin/node";
}

/** The bwrap arguments of one run, up to and including `--` (exported for the docs and the tests to read). */
export function bwrapArgs(limits: SandboxLimits): string[] {
  const links = ["bin", "lib", "lib64", "sbin"].flatMap((dir) => (existsSync(`/usr/${dir}`) ? ["--symlink", `usr/${dir}`, `/${dir}`] : []));
  return [
    "--ro-bind",
    "/usr",
    "/usr",
    ...links,
    ...["/etc/ld.so.cache", "/etc/alternatives"].flatMap((p) => (existsSync(p) ? ["--ro-bind", p, p] : [])),
    ...nodeBinds(),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--size",
    String(limits.scratchBytes),
    "--tmpfs",
    "/tmp",
    "--chdir",
    "/tmp",
    // The root and /dev are bwrap's own tmpfs: read-only too, so /tmp is the one place a run can write.
    "--remount-ro",
    "/dev",
    "--remount-ro",
    "/",
    "--unshare-all",
    "--hostname",
    "sandbox",
    "--die-with-parent",
    "--new-session",
    "--clearenv",
    "--setenv",
    "PATH",
    "/usr/local/bin:/usr/bin:/bin",
    "--setenv",
    "HOME",
    "/tmp",
    "--setenv",
    "LANG",
    "C.UTF-8",
    "--",
    "/usr/bin/prlimit",
    `--cpu=${limits.cpuSeconds}`,
    `--data=${limits.memoryBytes}`,
    `--nproc=${limits.processes}`,
    `--nofile=${limits.openFiles}`,
    `--fsize=${limits.fileBytes}`,
    "--core=0",
    // RLIMIT_NICE 0: no process of the run can raise its priority above nice 19.
    "--nice=0",
    "--",
  ];
}

/** The descriptor bwrap writes the sandbox's PID 1 to (`--info-fd`). */
const INFO_FD = 3;

export interface SandboxEngine {
  run(run: SandboxRun): Promise<SandboxResult>;
  /** How runs yield the CPU here (the cgroup used, or why none). */
  priority(): SandboxPriority;
}

/** Spawns sandboxes. Nothing here bounds how many run at once: the caller holds a slot of the server's semaphore. */
export function createSandboxEngine(options: SandboxEngineOptions = {}): SandboxEngine {
  const bwrap = options.bwrap ?? "bwrap";
  const uid = options.sandboxUid ?? 65534;
  const asRoot = typeof process.geteuid === "function" && process.geteuid() === 0;
  let found: SandboxPriority | undefined;
  const priority = () => (found ??= sandboxPriority(options.cpuWeight, options.cpuIdle ?? true));

  function run({ argv, stdin, limits, signal }: SandboxRun): Promise<SandboxResult> {
    const started = Date.now();
    const [program, ...prefix] = [
      ...priorityPrefix(priority()),
      ...(asRoot ? ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups"] : []),
      bwrap,
    ];
    return new Promise<SandboxResult>((resolve, reject) => {
      // `sh`, `chrt`, `ionice`, `nice` and `setpriv` exec into their successor: the pid is bwrap's. bwrap writes the
      // pid of the sandbox's PID 1 (its child in the new namespaces) to fd 3 (`--info-fd`), before that child goes on.
      const child = spawn(program, [...prefix, "--info-fd", String(INFO_FD), ...bwrapArgs(limits), ...argv], {
        cwd: "/",
        env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
        stdio: ["pipe", "pipe", "pipe", "pipe"],
      });
      let killed: SandboxResult["killed"] = null;
      // The sandbox's PID 1 is held as bwrap's child (its pid not reusable) until bwrap exits.
      let sandboxPid: number | null = null;
      let infoDone = false;
      let bwrapExited = false;
      const killAll = () => {
        // SIGKILL to the namespace's PID 1 ends every process of the namespace. bwrap's --die-with-parent would do it
        // when bwrap dies, but bwrap arms it only after its mounts: a stop landing during start-up would orphan a
        // sandbox that goes on to run its command. So the engine kills PID 1 itself, then bwrap.
        if (sandboxPid !== null && !bwrapExited) {
          try {
            process.kill(sandboxPid, "SIGKILL");
          } catch {
            // Already gone.
          }
        }
        child.kill("SIGKILL");
      };
      const kill = (why: NonNullable<SandboxResult["killed"]>) => {
        if (killed === null) killed = why;
        // Until bwrap has told the sandbox's pid (or closed fd 3 without it: no sandbox was made), the stop waits for
        // it: killing bwrap in between would leave the child it just cloned waiting forever, holding our pipes. Nothing
        // of the run's command runs before bwrap has written it.
        if (infoDone) killAll();
      };
      const info: Buffer[] = [];
      const infoStream = child.stdio[INFO_FD] as Readable;
      infoStream.on("data", (chunk: Buffer) => info.push(chunk));
      infoStream.on("error", () => undefined);
      infoStream.on("close", () => {
        const pid = /"child-pid"\s*:\s*(\d+)/.exec(Buffer.concat(info).toString("utf8"))?.[1];
        if (pid !== undefined) sandboxPid = Number(pid);
        infoDone = true;
        if (killed !== null) killAll();
      });
      child.on("exit", () => {
        bwrapExited = true;
      });
      const out: Buffer[] = [];
      let outBytes = 0;
      let outputCut = false;
      const err: Buffer[] = [];
      let errBytes = 0;
      child.stdout.on("data", (chunk: Buffer) => {
        const room = limits.maxOutputBytes - outBytes;
        if (chunk.length > room) {
          if (room > 0) out.push(chunk.subarray(0, room));
          outBytes = limits.maxOutputBytes;
          outputCut = true;
          kill("output");
          return;
        }
        out.push(chunk);
        outBytes += chunk.length;
      });
      child.stderr.on("data", (chunk: Buffer) => {
        const room = limits.maxStderrBytes - errBytes;
        if (room <= 0) return;
        err.push(chunk.subarray(0, room));
        errBytes += Math.min(room, chunk.length);
      });
      child.stdin.on("error", () => undefined);
      child.stdin.end(stdin ?? "");
      const timer = setTimeout(() => kill("timeout"), limits.timeoutMs);
      const onAbort = () => kill("aborted");
      signal?.addEventListener("abort", onAbort, { once: true });
      if (signal?.aborted) kill("aborted");
      child.on("error", (error) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        reject(error);
      });
      child.on("close", (code, sig) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve({
          exitCode: killed === null ? code : null,
          signal: killed === null ? sig : "SIGKILL",
          stdout: Buffer.concat(out).toString("utf8"),
          stderr: Buffer.concat(err).toString("utf8"),
          killed,
          outputCut,
          wallMs: Date.now() - started,
        });
      });
    });
  }

  return { run, priority };
}

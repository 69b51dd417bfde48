/**
 * The sandbox of hosted agents' JS Eval and Sandbox tools (issue 26, docs/hosted-agents.md "Sandbox tools",
 * docs/security.md "The sandbox"): the bubblewrap engine (engine.ts), the per-agent caps (caps.ts), a server-wide
 * bound on sandboxes running at once, and a probe that tells whether this machine has a working sandbox. Without one
 * every run is refused (SANDBOX_UNAVAILABLE): there is no weaker fallback.
 */
import type { Db } from "../db";
import type { SandboxConfig } from "../config";
import { MarketError } from "@market/core/errors";
import type { JsEvalTool, SandboxTool } from "@market/core/api";
import { createSandboxEngine, type SandboxEngine, type SandboxLimits, type SandboxResult } from "./engine";
import { createSandboxCaps, type SandboxCaps } from "./caps";
import { jsEvalAnswer, jsEvalArgv, sandboxAnswer, sandboxArgv } from "./tools";

export { createSandboxEngine, bwrapArgs, DEFAULT_SANDBOX_LIMITS, type SandboxEngine, type SandboxLimits, type SandboxResult } from "./engine";
export { substituteInput } from "@market/core/sandbox";

export interface SandboxStatus {
  available: boolean;
  /** Why not, when not available. */
  reason: string | null;
}

export type Sandbox = ReturnType<typeof createSandbox>;

/** Largest `input` a run takes (characters): it travels as one argument (Linux caps one at 128 KiB). */
export const MAX_SANDBOX_INPUT_CHARS = 64 * 1024;

/** A bound on concurrent sandboxes; a waiter gives up when its signal aborts. */
function createSlots(limit: number) {
  let used = 0;
  const waiting: Array<() => void> = [];
  return {
    inUse: () => used,
    acquire(signal?: AbortSignal): Promise<() => void> {
      const release = () => {
        used -= 1;
        waiting.shift()?.();
      };
      if (used < limit) {
        used += 1;
        return Promise.resolve(release);
      }
      return new Promise((resolve, reject) => {
        const grant = () => {
          signal?.removeEventListener("abort", onAbort);
          used += 1;
          resolve(release);
        };
        const onAbort = () => {
          const i = waiting.indexOf(grant);
          if (i >= 0) waiting.splice(i, 1);
          reject(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
        };
        waiting.push(grant);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
  };
}

export function createSandbox({ db, config, now, engine }: { db: Db; config: SandboxConfig; now: () => number; engine?: SandboxEngine }) {
  const sandbox =
    engine ?? createSandboxEngine({ bwrap: config.bwrap, sandboxUid: config.uid, cpuWeight: config.cpuWeight, cpuIdle: config.cpuIdle });
  const caps: SandboxCaps = createSandboxCaps({ db, now, runsPerMinute: config.runsPerMinute, dailySeconds: config.dailySeconds });
  const slots = createSlots(config.concurrency);

  const limitsFor = (timeoutMs: number): SandboxLimits => ({
    timeoutMs,
    cpuSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
    memoryBytes: config.memoryBytes,
    processes: config.processes,
    openFiles: 64,
    fileBytes: Math.min(config.scratchBytes, 16 * 1024 * 1024),
    scratchBytes: config.scratchBytes,
    maxOutputBytes: config.maxOutputBytes,
    maxStderrBytes: 8 * 1024,
  });

  let probed: Promise<SandboxStatus> | undefined;
  /**
   * Runs `sh` and Node in a sandbox once; later calls answer the same, but a failure is probed again a minute later
   * (a machine too busy to start Node within the probe's 15 s is not a machine without a sandbox).
   */
  function status(): Promise<SandboxStatus> {
    probed ??= probe().then((found) => {
      if (!found.available) setTimeout(() => (probed = undefined), 60_000).unref();
      return found;
    });
    return probed;
  }

  function probe(): Promise<SandboxStatus> {
    return (async () => {
      try {
        const limits = limitsFor(15_000);
        const sh = await sandbox.run({ argv: ["/bin/sh", "-c", "echo sandbox-ok"], limits });
        if (sh.stdout.trim() !== "sandbox-ok")
          return { available: false, reason: `bwrap did not run sh: ${(sh.stderr || `exit ${sh.exitCode}`).trim().slice(0, 300)}` };
        const js = await sandbox.run({ argv: jsEvalArgv(config.memoryBytes), stdin: JSON.stringify({ code: "return input + 1", input: 1 }), limits });
        if (jsEvalAnswer(js, limits.timeoutMs, limits.maxOutputBytes) !== "2")
          return { available: false, reason: `Node did not run in the sandbox: ${(js.stderr || `exit ${js.exitCode}`).trim().slice(0, 300)}` };
        return { available: true, reason: null };
      } catch (error) {
        return { available: false, reason: `bwrap could not start: ${(error as Error).message}` };
      }
    })();
  }

  async function requireAvailable() {
    const s = await status();
    if (!s.available) throw new MarketError("SANDBOX_UNAVAILABLE", `No working sandbox on this server: ${s.reason}`);
  }

  /** Admits the run (caps), waits for a slot, runs it, and charges its wall-clock time. */
  async function runCapped(
    agentId: number,
    timeoutSeconds: number | undefined,
    signal: AbortSignal,
    argvAndStdin: { argv: string[]; stdin?: string },
  ) {
    await requireAvailable();
    const leftMs = await caps.admit(agentId);
    const timeoutMs = Math.min((timeoutSeconds ?? config.defaultTimeoutSeconds) * 1000, leftMs);
    const limits = limitsFor(timeoutMs);
    const release = await slots.acquire(signal);
    let result: SandboxResult;
    try {
      result = await sandbox.run({ ...argvAndStdin, limits, signal });
    } finally {
      release();
    }
    await caps.charge(agentId, result.wallMs);
    return { result, limits };
  }

  return {
    status,
    caps,
    /** Sandboxes running now on this server. */
    running: () => slots.inUse(),
    /** Refuses (SANDBOX_UNAVAILABLE) unless this machine has a working sandbox: deploys of sandbox tools ask first. */
    requireAvailable,
    /** Runs a JS Eval tool; answers what the model sees. Refusals are coded MarketErrors. */
    async runJsEval(agentId: number, tool: JsEvalTool, input: unknown, signal: AbortSignal): Promise<string> {
      const stdin = JSON.stringify({ code: tool.code, input });
      if (stdin.length > MAX_SANDBOX_INPUT_CHARS + tool.code.length + 64)
        return `Error: the input is longer than ${MAX_SANDBOX_INPUT_CHARS} characters`;
      const { result, limits } = await runCapped(agentId, tool.timeoutSeconds, signal, { argv: jsEvalArgv(config.memoryBytes), stdin });
      return jsEvalAnswer(result, limits.timeoutMs, limits.maxOutputBytes);
    },
    /** Runs a Sandbox tool with `input` as one argument; answers what the model sees. */
    async runCommand(agentId: number, tool: SandboxTool, input: string, signal: AbortSignal): Promise<string> {
      if (input.length > MAX_SANDBOX_INPUT_CHARS) return `Error: the input is longer than ${MAX_SANDBOX_INPUT_CHARS} characters`;
      const argv = sandboxArgv(tool.setupCommand, tool.command, input);
      if ("error" in argv) return `Error: the command ${argv.error}`;
      const { result, limits } = await runCapped(agentId, tool.timeoutSeconds, signal, { argv });
      return sandboxAnswer(result, limits.timeoutMs, limits.maxOutputBytes);
    },
  };
}

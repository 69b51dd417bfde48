/**
 * Runs the built `market` CLI as a child process against the live stack (test/support/stack.ts), the way a user
 * runs it: its own process, configured by the environment, no terminal. `ensureCliBuilt` builds @market/core, then
 * the SDK and the CLI package (@market/cli, cli/) when their output is missing or older than the sources; `npm test`
 * builds first anyway (pretest).
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { Stack } from "./stack";

const ROOT = path.resolve(__dirname, "../..");
export const CLI_MAIN = path.join(ROOT, "cli/dist/cli/src/main.js");
const SDK_MAIN = path.join(ROOT, "sdk/dist/sdk/src/index.js");
const CORE_MAIN = path.join(ROOT, "core/dist/core/errors.js");
const PAUSED_CLI = path.join(__dirname, "paused-cli.ts");

function newestMtime(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) newest = entry.name === "dist" ? newest : Math.max(newest, newestMtime(full));
    else if (entry.name.endsWith(".ts")) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

/** Builds core, the SDK and the CLI (each by its own tsconfig.json) unless the builds are newer than every source. */
export function ensureCliBuilt() {
  const sources = Math.max(...["cli/src", "sdk/src", "core"].map((d) => newestMtime(path.join(ROOT, d))));
  const built = [CLI_MAIN, SDK_MAIN, CORE_MAIN].map((file) => (existsSync(file) ? statSync(file).mtimeMs : 0));
  if (Math.min(...built) >= sources) return;
  try {
    // core first (the other two compile against its declarations), then the SDK and the CLI side by side.
    const all =
      "npm run build -w @market/core && { npm run build -w @market/sdk & sdk=$!; npm run build -w @market/cli; cli=$?; wait $sdk && exit $cli; }";
    execFileSync("sh", ["-c", all], { cwd: ROOT, stdio: "pipe" });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`building core, the SDK and the CLI failed:\n${stdout?.toString() ?? ""}${stderr?.toString() ?? ""}`, { cause: error });
  }
}

export interface CliRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  /** The output so far. */
  output(): { stdout: string; stderr: string };
  done: Promise<CliRun>;
}

/**
 * The environment that makes the CLI act as `signer` on the stack, with `apiKey` (else a new key) and a state
 * directory of its own (MARKET_STATE_DIR); `extra` adds or overrides variables.
 */
export async function cliEnv(
  s: Stack,
  signer: HardhatEthersSigner,
  options: { apiKey?: string; extra?: Record<string, string> } = {},
): Promise<NodeJS.ProcessEnv> {
  const client = await s.clientOptions(signer, options.apiKey);
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith("MARKET_")) env[name] = value;
  return {
    ...env,
    MARKET_API_KEY: client.apiKey,
    MARKET_PRIVATE_KEY: client.executor.privateKey,
    MARKET_API_URL: client.baseUrl,
    MARKET_RPC_ARC: client.executor.rpcUrls.arc,
    MARKET_ESCROW_ARC: client.escrows.arc,
    // The CLI's state (the funded-rows index) in a directory of the test's own, never the user's ~/.market.
    MARKET_STATE_DIR: taskDir({}),
    ...options.extra,
  };
}

export interface CliOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Pauses `post-tasks` for `ms` once the journal holds this step (`funding`: before sending; `funded`: before listing). */
  pauseAfter?: { step: "funding" | "funded"; ms: number };
}

export function startCli(args: readonly string[], options: CliOptions): CliProcess {
  const pause = options.pauseAfter;
  // The paused command is TypeScript run from the task directory: ts-node is told where the project is.
  const command = pause ? ["-r", require.resolve("ts-node/register/transpile-only"), PAUSED_CLI, pause.step, String(pause.ms)] : [CLI_MAIN];
  const env = pause ? { ...options.env, TS_NODE_PROJECT: path.join(ROOT, "tsconfig.json") } : options.env;
  const child = spawn(process.execPath, [...command, ...args], { cwd: options.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end();
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<CliRun>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
  return { child, output: () => ({ stdout, stderr }), done };
}

export function runCli(args: readonly string[], options: CliOptions): Promise<CliRun> {
  return startCli(args, options).done;
}

const taskDirs: string[] = [];
process.on("exit", () => {
  for (const dir of taskDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory holding the given files (paths relative to it); removed when the test process exits. */
export function taskDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "market-cli-"));
  taskDirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** The results file as rows of named cells (a minimal CSV reader: the CLI quotes only error messages). */
export function readResults(file: string): Array<Record<string, string>> {
  const [header, ...lines] = readFileSync(file, "utf8").trimEnd().split("\n");
  const columns = header!.split(",");
  return lines.map((line) => {
    const cells: string[] = [];
    let cell = "";
    let quoted = false;
    for (let i = 0; i < line.length; i++) {
      const c = line[i]!;
      if (quoted) {
        if (c === '"' && line[i + 1] === '"') {
          cell += '"';
          i++;
        } else if (c === '"') quoted = false;
        else cell += c;
      } else if (c === '"') quoted = true;
      else if (c === ",") {
        cells.push(cell);
        cell = "";
      } else cell += c;
    }
    cells.push(cell);
    return Object.fromEntries(columns.map((name, i) => [name, cells[i] ?? ""]));
  });
}

/** The journal's entries. */
export function readJournalEntries(file: string): Array<{ t: string; [key: string]: unknown }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as { t: string }];
      } catch {
        return [];
      }
    });
}

/** Resolves once `check` is true (polling), or rejects after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

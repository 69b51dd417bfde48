import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { HDNodeWallet, Mnemonic } from "ethers";
import { lockPidFile } from "../../sdk/src/node";

/** Hardhat's built-in development mnemonic: its keys are public, for local chains only. */
export const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";

export interface LocalChain {
  url: string;
  /** Private keys of the node's funded accounts, in account order. */
  accounts: string[];
  process: ChildProcess;
  /** Sends the node SIGTERM; `exited` tells when it is gone (its port free). */
  stop(): void;
  exited: Promise<void>;
}

export function hardhatAccountKeys(count = 20): string[] {
  const mnemonic = Mnemonic.fromPhrase(HARDHAT_MNEMONIC);
  return Array.from({ length: count }, (_, i) => HDNodeWallet.fromMnemonic(mnemonic, `m/44'/60'/0'/0/${i}`).privateKey);
}

/**
 * What the node's process runs before Hardhat: every half second it checks that the process that started it is still
 * its parent (on Linux, the live parent id of /proc/self/stat; elsewhere, that the parent answers a signal 0), and
 * exits when not. A starter killed with SIGKILL (no exit handler runs) thus leaves no chain behind.
 */
const DIE_WITH_PARENT = `
const parent = Number(process.env.MARKET_CHAIN_PARENT_PID);
const parentNow = () => {
  try {
    const stat = require("node:fs").readFileSync("/proc/self/stat", "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    try { process.kill(parent, 0); return parent; } catch (error) { return error.code === "EPERM" ? parent : 0; }
  }
};
setInterval(() => { if (parentNow() !== parent) process.exit(0); }, 500).unref();
`;

/** Starts `hardhat node` on 127.0.0.1 as a child process and resolves once it answers JSON-RPC. */
export async function startLocalChain(options: {
  port: number;
  /** The node's chain id; default Hardhat's 31337. */
  chainId?: number;
  timeoutMs?: number;
  quiet?: boolean;
}): Promise<LocalChain> {
  const url = `http://127.0.0.1:${options.port}`;
  // A node already answering there is not ours: refuse it rather than deploy to it as if it were new.
  if (!(await portIsFree(options.port))) throw new Error(`port ${options.port} on 127.0.0.1 is already in use`);
  const cli = require.resolve("hardhat/internal/cli/cli");
  const args = ["node", "--hostname", "127.0.0.1", "--port", String(options.port)];
  // `node -e`: the watchdog first, then Hardhat's CLI in the same process, with the arguments it would have had.
  const script = `${DIE_WITH_PARENT}process.argv = [process.argv[0], ${JSON.stringify(cli)}, ...${JSON.stringify(args)}];\nrequire(${JSON.stringify(cli)});`;
  const child = spawn(process.execPath, ["-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: a Ctrl-C in the terminal reaches the script, which stops the API first and then the
    // chain, instead of the chain dying under the indexers mid-request. It dies with the script all the same (above).
    detached: true,
    // The parent may run with --network localhost (HARDHAT_NETWORK); the node itself must serve the in-process network.
    env: {
      ...process.env,
      HARDHAT_NETWORK: "hardhat",
      FORK_URL: "",
      MARKET_CHAIN_PARENT_PID: String(process.pid),
      MARKET_NODE_CHAIN_ID: options.chainId === undefined ? "" : String(options.chainId),
    },
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    if (output.length < 20_000) output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    if (!options.quiet) process.stderr.write(chunk);
  });
  const stop = () => {
    if (child.exitCode === null) child.kill("SIGTERM");
  };
  process.once("exit", stop);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`hardhat node exited (${child.exitCode}) before answering:\n${output}`);
    if (await answers(url)) return { url, accounts: hardhatAccountKeys(), process: child, stop, exited };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  stop();
  throw new Error(`hardhat node on ${url} did not answer within the timeout:\n${output}`);
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    return response.ok;
  } catch {
    return false;
  }
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** True when nothing listens on 127.0.0.1:`port` (binding it succeeds). */
export async function portIsFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Takes `<dir>.lock` (beside the folder, which the holder may delete and recreate), holding this process's pid. Refuses
 * with an Error naming the holder while another live process has it; a lock left by a process that died is taken
 * over. Returns the function that releases it (also run at exit).
 */
export function lockDirectory(dir: string): () => void {
  return lockPidFile(`${dir}.lock`, (holder) =>
    holder === undefined ? new Error(`could not lock ${dir}`) : new Error(`${dir} is in use by process ${holder} (another npm start?)`),
  );
}

/** Whether process `pid` is alive (a zombie, killed and not yet reaped, is not). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !"ZX".includes(stat.slice(stat.lastIndexOf(")") + 2)[0]!);
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  }
}

/**
 * The processes that started this one, nearest first: its parent, and on Linux the parent's own starters while they are
 * `node`, `npm`/`npx` or `sh` (for `npm start`: `hardhat run`, its `sh -c` if any, and npm), up to the user's shell.
 */
export function starters(): number[] {
  const found = [process.ppid];
  const stat = (pid: number) => {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const end = text.lastIndexOf(")");
    return { name: text.slice(text.indexOf("(") + 1, end), parent: Number(text.slice(end + 2).split(" ")[1]) };
  };
  try {
    for (let parent = stat(process.ppid).parent; parent > 1; parent = stat(parent).parent) {
      if (!/^(node|npm|npx|sh)\b/.test(stat(parent).name)) break;
      found.push(parent);
    }
  } catch {
    // No /proc (not Linux), or a starter gone meanwhile: those found so far.
  }
  return found;
}

/**
 * Calls `onGone` once, when any of `starters()` dies (checked every half second): `npm start` killed with SIGKILL, or
 * its `hardhat run` parent, stops the stack instead of leaving it running with no terminal to stop it from.
 */
export function whenStartersDie(onGone: () => void): () => void {
  const watched = starters();
  const timer = setInterval(() => {
    if (watched.every(isAlive)) return;
    clearInterval(timer);
    onGone();
  }, 500);
  timer.unref();
  return () => clearInterval(timer);
}

import { spawn, type ChildProcess } from "node:child_process";
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
  stop(): void;
}

export function hardhatAccountKeys(count = 20): string[] {
  const mnemonic = Mnemonic.fromPhrase(HARDHAT_MNEMONIC);
  return Array.from({ length: count }, (_, i) => HDNodeWallet.fromMnemonic(mnemonic, `m/44'/60'/0'/0/${i}`).privateKey);
}

/** Starts `hardhat node` on 127.0.0.1 as a child process and resolves once it answers JSON-RPC. */
export async function startLocalChain(options: { port: number; timeoutMs?: number; quiet?: boolean }): Promise<LocalChain> {
  const url = `http://127.0.0.1:${options.port}`;
  // A node already answering there is not ours: refuse it rather than deploy to it as if it were new.
  if (!(await portIsFree(options.port))) throw new Error(`port ${options.port} on 127.0.0.1 is already in use`);
  const cli = require.resolve("hardhat/internal/cli/cli");
  const child = spawn(process.execPath, [cli, "node", "--hostname", "127.0.0.1", "--port", String(options.port)], {
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: a Ctrl-C in the terminal reaches the script, which stops the API first and then the
    // chain, instead of the chain dying under the indexers mid-request.
    detached: true,
    // The parent may run with --network localhost (HARDHAT_NETWORK); the node itself must serve the in-process network.
    env: { ...process.env, HARDHAT_NETWORK: "hardhat", FORK_URL: "" },
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

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`hardhat node exited (${child.exitCode}) before answering:\n${output}`);
    if (await answers(url)) return { url, accounts: hardhatAccountKeys(), process: child, stop };
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

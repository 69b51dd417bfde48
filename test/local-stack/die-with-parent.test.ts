/**
 * `npm start` killed with SIGKILL leaves nothing running (issue 29): a local chain exits once the process that started
 * it is gone (no exit handler of that process ever runs), and a process watching its starters (start.ts) stops when one
 * of them, e.g. npm or `hardhat run`, is killed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { expect } from "chai";
import { freePort, portIsFree } from "../../scripts/lib/local-chain";

const HOLDER = path.join(__dirname, "..", "support", "chain-holder.ts");
const TS_NODE = require.resolve("ts-node/register/transpile-only");

/** Resolves with the first line of `child`'s stdout that starts with `ready`. */
function ready(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((l) => l.startsWith("ready"));
      if (line) resolve(line);
    });
    child.once("exit", (code) => reject(new Error(`exited (${code}) before ready: ${output}`)));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => Promise<boolean> | boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return check();
}

describe("npm start's processes die with their starter", function () {
  this.timeout(120_000);
  const started: number[] = [];
  after(() => {
    for (const pid of started) if (alive(pid)) process.kill(pid, "SIGKILL");
  });

  it("a local chain exits within seconds once the process that started it is killed with SIGKILL", async () => {
    const port = await freePort();
    const holder = spawn(process.execPath, ["-r", TS_NODE, HOLDER, String(port)], { stdio: ["ignore", "pipe", "inherit"] });
    started.push(holder.pid!);
    const node = Number((await ready(holder)).split(" ")[1]);
    started.push(node);
    expect(await portIsFree(port)).to.equal(false);
    process.kill(holder.pid!, "SIGKILL");
    expect(await until(() => !alive(node), 5_000), "the chain's process is gone").to.equal(true);
    expect(await until(() => portIsFree(port), 2_000)).to.equal(true);
  });

  it("a process watching its starters stops, and its chain with it, when its parent's parent (npm) is killed with SIGKILL", async () => {
    const port = await freePort();
    // npm -> hardhat run -> start.ts, played by node -> node -> the holder.
    const middle = `const c = require("node:child_process").spawn(process.execPath, ["-r", ${JSON.stringify(TS_NODE)}, ${JSON.stringify(HOLDER)}, "${port}", "watch"], { stdio: "inherit" }); c.on("exit", () => process.exit(0)); setInterval(() => {}, 60000);`;
    const top = spawn(
      process.execPath,
      [
        "-e",
        `require("node:child_process").spawn(process.execPath, ["-e", ${JSON.stringify(middle)}], { stdio: "inherit" }); setInterval(() => {}, 60000);`,
      ],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    started.push(top.pid!);
    const node = Number((await ready(top)).split(" ")[1]);
    started.push(node);
    expect(await portIsFree(port)).to.equal(false);
    process.kill(top.pid!, "SIGKILL");
    expect(await until(() => !alive(node), 8_000), "the chain's process is gone").to.equal(true);
    expect(await until(() => portIsFree(port), 2_000)).to.equal(true);
  });
});

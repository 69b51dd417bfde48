/**
 * Attacks on the sandbox of JS Eval and Sandbox tools (issue 26), each as a JS Eval function and as a Sandbox command,
 * through the server's sandbox service (the path a hosted agent's tool call takes): every one fails cleanly, and the
 * API keeps answering while it runs. Limits are small (2 s timeouts, 16 processes, 128 MB) so that the bombs stay
 * bounded on a shared machine.
 */
import { expect } from "chai";
import { createServer, connect, type Server } from "node:net";
import { mkdtempSync, writeFileSync, existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startStack, type Stack } from "../support/stack";
import { TEST_MASTER_KEY } from "../server/harness";
import { DEFAULT_SANDBOX } from "../../server/config";
import { bwrapArgs, createSandboxEngine, DEFAULT_SANDBOX_LIMITS } from "../../server/sandbox";
import { spawnSync } from "node:child_process";
import type { JsEvalTool, SandboxTool } from "@market/core/api";

const AGENT = 1;
const TIMEOUT_SECONDS = 2;
const js = (code: string, timeoutSeconds = TIMEOUT_SECONDS): JsEvalTool => ({
  type: "js_eval",
  name: "attack",
  description: "attack",
  code,
  timeoutSeconds,
});
const sh = (command: string, timeoutSeconds = TIMEOUT_SECONDS, setupCommand?: string): SandboxTool => ({
  type: "sandbox",
  name: "attack",
  description: "attack",
  command,
  timeoutSeconds,
  ...(setupCommand ? { setupCommand } : {}),
});

/** Whether a TCP connection to 127.0.0.1:port opens from the host (the target is really there). */
function hostConnects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Processes on the host whose command line contains `marker`. */
function hostProcesses(marker: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^[0-9]+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (cmd.includes(marker) && Number(pid) !== process.pid) found.push(`${pid}: ${cmd}`);
    } catch {
      // Ended meanwhile.
    }
  }
  return found;
}

describe("sandbox: attacks fail cleanly and the API keeps answering", function () {
  this.timeout(120_000);
  let s: Stack;
  let dataDir: string;
  let standIn: Server;
  let standInPort: number;

  before(async function () {
    s = await startStack({
      hosted: {
        sandbox: {
          ...DEFAULT_SANDBOX,
          runsPerMinute: 10_000,
          dailySeconds: 100_000,
          processes: 16,
          memoryBytes: 128 * 1024 * 1024,
          maxOutputBytes: 16 * 1024,
          // A default group's CPU weight rather than the idle group: the 2 s runs here start in time on a busy shared
          // machine (the default yields to everything else; test/sandbox/priority.test.ts).
          cpuWeight: 100,
          cpuIdle: false,
        },
      },
    });
    // A data folder as the server keeps one: a key file in a folder of the host.
    dataDir = mkdtempSync(path.join(tmpdir(), "market-data-"));
    writeFileSync(path.join(dataDir, "master.key"), TEST_MASTER_KEY);
    // A loopback service (standing in for PostgreSQL when the suite runs on SQLite; PostgreSQL's own port is tried too).
    standIn = createServer((socket) => {
      socket.on("error", () => undefined);
      socket.end("hello\n");
    });
    await new Promise<void>((resolve) => standIn.listen(0, "127.0.0.1", resolve));
    standInPort = (standIn.address() as { port: number }).port;
    expect((await s.hosting.sandbox.status()).available, "this machine has a working sandbox").to.equal(true);
  });
  after(async function () {
    await new Promise((resolve) => standIn.close(resolve));
    rmSync(dataDir, { recursive: true, force: true });
    await s.close();
  });

  const runJs = (code: string, input: unknown = null, timeoutSeconds?: number) =>
    s.hosting.sandbox.runJsEval(AGENT, js(code, timeoutSeconds), input, new AbortController().signal);
  const runSh = (command: string, input = "", timeoutSeconds?: number, setup?: string) =>
    s.hosting.sandbox.runCommand(AGENT, sh(command, timeoutSeconds, setup), input, new AbortController().signal);

  /** Runs `attack` while polling the API's /health: every poll must answer 200 within 2 s. */
  async function whileApiAnswers<T>(attack: () => Promise<T>): Promise<T> {
    let done = false;
    const polls: Array<{ status: number; ms: number }> = [];
    const poller = (async () => {
      while (!done) {
        const started = Date.now();
        const response = await fetch(`${s.apiUrl}/health`, { signal: AbortSignal.timeout(5_000) });
        await response.arrayBuffer();
        polls.push({ status: response.status, ms: Date.now() - started });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    try {
      return await attack();
    } finally {
      done = true;
      await poller;
      expect(polls.length).to.be.greaterThan(0);
      expect(polls.every((p) => p.status === 200)).to.equal(true);
      expect(Math.max(...polls.map((p) => p.ms))).to.be.below(2_000);
    }
  }

  it("runs ordinary code: JS Eval returns its value, Sandbox answers exit status and stdout", async function () {
    expect(await runJs("return { sum: input.a + input.b }", { a: 2, b: 3 })).to.equal('{"sum":5}');
    expect(await runSh("echo hello; exit 3")).to.equal("exit 3\nhello\n");
    expect(await runSh("cat /tmp/setup", "", undefined, "echo prepared > /tmp/setup")).to.equal("exit 0\nprepared\n");
    expect(await runSh("echo never", "", undefined, "exit 7")).to.equal("exit 7\n");
  });

  it("sees no server files: the data folder, the repository, the master key, /root, the host's /proc/<pid>/environ", async function () {
    const targets = [
      dataDir,
      path.join(dataDir, "master.key"),
      process.cwd(),
      path.join(process.cwd(), "package.json"),
      "/root",
      "/work",
      `/proc/${process.pid}/environ`,
    ];
    const jsAnswer = await whileApiAnswers(() =>
      runJs(
        `const fs = require("fs"); return input.map((p) => { try { return fs.readdirSync(p).length + " entries"; } catch (e) { try { return fs.readFileSync(p, "utf8"); } catch (e2) { return e2.code; } } });`,
        targets,
      ),
    );
    expect(JSON.parse(jsAnswer)).to.deep.equal(targets.map(() => "ENOENT"));
    const shAnswer = await whileApiAnswers(() =>
      runSh(`for p in ${targets.join(" ")}; do cat "$p" 2>/dev/null || ls "$p" 2>/dev/null || echo "none $p"; done`),
    );
    expect(shAnswer).to.equal(`exit 0\n${targets.map((p) => `none ${p}\n`).join("")}`);
    // What the sandbox does see: its own environment (no secret) and its own processes (PID namespace).
    const env = JSON.parse(
      await runJs("return { env: process.env, pids: require('fs').readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p)) }"),
    ) as {
      env: Record<string, string>;
      pids: string[];
    };
    expect(Object.keys(env.env).sort()).to.deep.equal(["HOME", "LANG", "PATH", "PWD"]);
    expect(env.pids.length).to.be.below(6);
    const initEnv = await runSh("tr '\\0' '\\n' < /proc/1/environ; cat /proc/self/environ | tr '\\0' '\\n'");
    expect(initEnv).to.not.include(TEST_MASTER_KEY);
    expect(initEnv).to.not.match(/MARKET_|DATABASE_URL|TEST_DATABASE_URL/);
  });

  it("cannot list or read another run's scratch folder", async function () {
    const first = runSh("echo other-agent-secret > /tmp/scratch-of-a; sleep 1.5; cat /tmp/scratch-of-a", "", 5);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const jsLook = await runJs(
      "const fs = require('fs'); return { tmp: fs.readdirSync('/tmp'), found: require('child_process').execSync('find / -path /usr -prune -o -path /proc -prune -o -name scratch-of-a -print 2>/dev/null || true').toString() }",
    );
    expect(JSON.parse(jsLook), jsLook).to.deep.equal({ tmp: [], found: "" });
    const shLook = await runSh("ls -A /tmp; find / -path /usr -prune -o -path /proc -prune -o -name scratch-of-a -print 2>/dev/null; echo end");
    expect(shLook).to.equal("exit 0\nend\n");
    expect(await first).to.equal("exit 0\nother-agent-secret\n");
  });

  it("cannot connect to the API, the chain node or PostgreSQL on loopback (no network at all)", async function () {
    const ports = [Number(new URL(s.apiUrl).port), Number(new URL(s.rpcUrl).port), standInPort];
    if (process.env.TEST_DATABASE_URL) ports.push(Number(new URL(process.env.TEST_DATABASE_URL).port || 5432));
    for (const port of ports) expect(await hostConnects(port), `the host reaches ${port}`).to.equal(true);
    const probe = `const net = require("net"); const tryPort = (port) => new Promise((resolve) => { const c = net.connect(port, "127.0.0.1"); c.once("connect", () => { c.destroy(); resolve("connected"); }); c.once("error", (e) => resolve(e.code)); }); return Promise.all(input.map(tryPort));`;
    const jsAnswer = JSON.parse(await whileApiAnswers(() => runJs(probe, ports))) as string[];
    expect(jsAnswer).to.have.length(ports.length);
    for (const code of jsAnswer) expect(code).to.be.oneOf(["ECONNREFUSED", "ENETUNREACH"]);
    const shAnswer = await whileApiAnswers(() =>
      runSh(
        `for p in ${ports.join(" ")}; do curl -s -m 1 "http://127.0.0.1:$p/health" >/dev/null && echo "reached $p" || echo "refused $p"; done; curl -s -m 1 http://169.254.169.254/ || echo no-metadata`,
      ),
    );
    expect(shAnswer).to.equal(`exit 0\n${ports.map((p) => `refused ${p}\n`).join("")}no-metadata\n`);
  });

  it("a fork bomb is stopped by the process limit and the timeout, and leaves nothing behind", async function () {
    const shAnswer = await whileApiAnswers(() => runSh("bomb() { bomb | bomb & }; bomb; sleep 1; echo processes $(ls /proc | grep -c '^[0-9]')"));
    const count = Number(/processes ([0-9]+)/.exec(shAnswer)?.[1]);
    expect(count, shAnswer).to.be.at.most(17);
    const jsAnswer = await whileApiAnswers(() =>
      runJs(
        "const cp = require('child_process'); let made = 0, refused = 0; for (let i = 0; i < 200; i++) { try { cp.spawn('sleep', ['30']).on('error', () => refused++); made++; } catch { refused++; } } await new Promise((r) => setTimeout(r, 500)); return { alive: require('fs').readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p)).length };",
      ),
    );
    expect(JSON.parse(jsAnswer).alive).to.be.at.most(17);
    expect(hostProcesses("sleep 30 ")).to.deep.equal([]); // "sleep 300" is another test's
  });

  it("what stops the fork bomb: RLIMIT_NPROC binds a root server's sandbox only after the drop to its own uid", async function () {
    // As root, the kernel ignores RLIMIT_NPROC (bwrap run directly, without the engine's setpriv): 40 processes start
    // under a limit of 16. The engine's runs (above) stop at the limit. A server that is not root needs no drop.
    if (process.geteuid?.() !== 0) this.skip();
    const limits = { ...DEFAULT_SANDBOX_LIMITS, processes: 16 };
    const count = "i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done 2>/dev/null; ls /proc | grep -c '^[0-9]'; kill $(jobs -p) 2>/dev/null";
    const asRoot = spawnSync("bwrap", [...bwrapArgs(limits), "/bin/sh", "-c", count], { encoding: "utf8", timeout: 20_000 });
    expect(Number(asRoot.stdout.trim())).to.be.greaterThan(40);
    const dropped = spawnSync(
      "setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", "bwrap", ...bwrapArgs(limits), "/bin/sh", "-c", count],
      {
        encoding: "utf8",
        timeout: 20_000,
      },
    );
    expect(Number(dropped.stdout.trim())).to.be.at.most(17);
  });

  it("an endless loop is stopped by the timeout (CPU limit behind it)", async function () {
    const started = Date.now();
    expect(await whileApiAnswers(() => runJs("for (;;) {}"))).to.equal(`Error: the run was stopped after its ${TIMEOUT_SECONDS} s timeout`);
    expect(await whileApiAnswers(() => runSh("while :; do :; done"))).to.equal(
      `stopped (the run was stopped after its ${TIMEOUT_SECONDS} s timeout)\n`,
    );
    expect(Date.now() - started).to.be.below(10_000);
  });

  it("a memory bomb dies at the memory limit", async function () {
    const jsAnswer = await whileApiAnswers(() => runJs("const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));", null, 10));
    expect(jsAnswer).to.match(/^Error: the function ended without a result/);
    const heapAnswer = await whileApiAnswers(() => runJs("const a = []; for (;;) a.push(new Array(1e6).fill(1.5));", null, 10));
    expect(heapAnswer).to.match(/^Error: the function ended without a result/);
    const shAnswer = await whileApiAnswers(() => runSh("mawk 'BEGIN { s = \"x\"; for (;;) s = s s }'; echo status $?", "", 10));
    expect(shAnswer).to.match(/^exit 0\nstatus [1-9][0-9]*\n$/);
  });

  it("gigabytes of output are cut at the stated size while reading, and the run is stopped", async function () {
    const started = Date.now();
    const jsAnswer = await whileApiAnswers(() => runJs("const line = 'x'.repeat(1 << 20); for (;;) process.stdout.write(line);", null, 20));
    expect(jsAnswer).to.equal("Error: the run was stopped: its output passed 16384 bytes");
    const shAnswer = await whileApiAnswers(() => runSh("yes gigabytes", "", 20));
    expect(shAnswer.startsWith("stopped (the run was stopped: its output passed 16384 bytes)\ngigabytes\n")).to.equal(true);
    expect(shAnswer.length).to.be.below(6_100);
    expect(Date.now() - started).to.be.below(10_000);
  });

  it("cannot write outside its scratch folder; files inside it are bounded", async function () {
    const targets = ["/usr/evil", "/etc/evil", "/evil", "/proc/evil", "/dev/evil", `${process.cwd()}/evil`];
    const jsAnswer = JSON.parse(
      await runJs(
        "const fs = require('fs'); return input.map((p) => { try { fs.writeFileSync(p, 'x'); return 'written'; } catch (e) { return 'refused'; } });",
        targets,
      ),
    ) as string[];
    expect(jsAnswer).to.deep.equal(targets.map(() => "refused"));
    const shAnswer = await runSh(`for p in ${targets.join(" ")}; do (echo x > "$p") 2>/dev/null && echo "written $p" || echo "refused $p"; done`);
    expect(shAnswer).to.equal(`exit 0\n${targets.map((p) => `refused ${p}\n`).join("")}`);
    for (const p of targets) expect(existsSync(p), p).to.equal(false);
    // A file larger than the file-size limit (16 MB) stops at it.
    const big = await runSh("head -c 40000000 /dev/zero > /tmp/big 2>/dev/null; echo status $?; wc -c < /tmp/big", "", 10);
    expect(big).to.match(/^exit 0\nstatus [1-9][0-9]*\n1677721[0-9]\n$/);
  });

  it("leaves no process running after the timeout, even one in its own session", async function () {
    const jsAnswer = await runJs(
      "require('child_process').spawn('setsid', ['sleep', '77771'], { detached: true, stdio: 'ignore' }).unref(); for (;;) {}",
    );
    expect(jsAnswer).to.equal(`Error: the run was stopped after its ${TIMEOUT_SECONDS} s timeout`);
    const shAnswer = await runSh("setsid sleep 77772 & nohup sleep 77773 >/dev/null 2>&1 & while :; do :; done");
    expect(shAnswer).to.equal(`stopped (the run was stopped after its ${TIMEOUT_SECONDS} s timeout)\n`);
    // The PID namespace died with its init: nothing of either run is left on the host.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hostProcesses("sleep 7777")).to.deep.equal([]);
  });

  it("leaves nothing behind when a run is stopped while bwrap still sets its sandbox up", async function () {
    // bwrap arms --die-with-parent in the sandbox's PID 1 only once its mounts are done: a run stopped before that (a
    // timeout or an abort landing during start-up, a window that grows when the machine is busy) must still end all
    // of it. Stops land at 0-40 ms, across the start-up; every run must end and leave no process.
    const engine = createSandboxEngine({ cpuWeight: 100, cpuIdle: false });
    const limits = { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 60_000 };
    const runs = Array.from({ length: 12 }, async (_, i) => {
      const stop = new AbortController();
      setTimeout(() => stop.abort(), (i * 40) / 12);
      return engine.run({ argv: ["/bin/sh", "-c", "sleep 77781", "early-stop"], limits, signal: stop.signal });
    });
    const ended = await Promise.race([Promise.all(runs), new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000))]);
    const left = hostProcesses("77781");
    for (const line of left) process.kill(Number(line.split(":")[0]), "SIGKILL");
    expect(left, "no process of a stopped run is left").to.deep.equal([]);
    expect(ended, "every stopped run ended").to.not.equal(null);
    expect(ended!.map((r) => r.killed)).to.deep.equal(Array(12).fill("aborted"));
  });

  it("{input} with shell metacharacters is one inert argument", async function () {
    const input = "a b; touch /tmp/pwned && echo INJECTED $(id -u) `id -u` | cat > /tmp/x; echo \"quoted\" 'single' \\ $HOME * ? [x] ~ &\nnewline";
    expect(await runSh("printf '%s|' {input}; echo; ls -A /tmp", input)).to.equal(`exit 0\n${input}|\n`);
    expect(await runSh('printf "<%s>" "before {input} after"; echo', input)).to.equal(`exit 0\n<before ${input} after>\n`);
    expect(await runSh("set -- {input} {input}; echo $#", input)).to.equal("exit 0\n2\n");
    expect(JSON.parse(await runJs("return [input, typeof input]", input))).to.deep.equal([input, "string"]);
    // A placeholder in single quotes would not be expanded: refused rather than run.
    expect(await runSh("echo '{input}'", input)).to.equal("Error: the command has {input} inside single quotes, where the shell would not expand it");
  });
});

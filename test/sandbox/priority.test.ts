/**
 * Sandbox runs yield the CPU to the server (issue 26, "Load"; server/sandbox/priority.ts): a sandboxed process runs
 * under SCHED_IDLE and at nice 19, which it cannot undo, and starts in the idle I/O class; where the cpu cgroup is
 * writable it runs inside the `market-sandbox-idle` cgroup (`cpu.idle` 1) by default, or the `market-sandbox-w<weight>`
 * cgroup at the configured weight with `SANDBOX_CPU_IDLE=0`.
 */
import { expect } from "chai";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createSandboxEngine, DEFAULT_SANDBOX_LIMITS, type SandboxEngine } from "../../server/sandbox";

const SCHED_IDLE = 5;
const limits = { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 20_000 };

/** The names of the processes in the cgroup whose `cgroup.procs` is given, once a run's `sleep` shows there. */
async function namesInside(engine: SandboxEngine, procs: string): Promise<string[]> {
  const running = engine.run({ argv: ["/bin/sh", "-c", "exec sleep 3"], limits });
  let inside: string[] = [];
  for (let i = 0; i < 300 && !inside.includes("sleep"); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    inside = readFileSync(procs, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((pid) => {
        try {
          return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
        } catch {
          return "";
        }
      });
  }
  expect((await running).exitCode).to.equal(0);
  return inside;
}

describe("sandbox: runs yield the CPU to the server", function () {
  this.timeout(60_000);
  // Weighted: the runs below start in time on a busy shared machine (the idle group yields to every other process).
  const weighted = createSandboxEngine({ cpuWeight: 7, cpuIdle: false });

  it("runs its processes at SCHED_IDLE and nice 19, which they cannot undo, in the idle I/O class", async function () {
    const script = [
      "cat /proc/self/stat",
      "echo io=$(ionice)",
      "chrt --other -p 0 $$ 2>/dev/null; echo other=$?",
      "chrt --batch -p 0 $$ 2>/dev/null; echo batch=$?",
      "renice -n 0 -p $$ >/dev/null 2>&1; echo renice=$?",
      "echo after=$(cut -d' ' -f19 /proc/self/stat)",
    ].join("; ");
    const run = await weighted.run({ argv: ["/bin/sh", "-c", script], limits });
    expect(run.exitCode, run.stderr).to.equal(0);
    const [stat, ...lines] = run.stdout.trim().split("\n");
    // /proc/<pid>/stat after the command's closing parenthesis: field 19 is nice, field 41 the scheduling policy.
    const fields = stat!.slice(stat!.lastIndexOf(")") + 2).split(" ");
    expect(Number(fields[19 - 3]), "nice").to.equal(19);
    expect(Number(fields[41 - 3]), "policy").to.equal(SCHED_IDLE);
    expect(lines).to.deep.equal(["io=idle", "other=1", "batch=1", "renice=1", "after=19"]);
  });

  it("by default runs inside the market-sandbox-idle cgroup, SCHED_IDLE as a group (cpu.idle 1), where the kernel has it", async function () {
    const engine = createSandboxEngine();
    const priority = engine.priority();
    if (priority.cgroupProcs === null) {
      // No writable cpu cgroup here: the per-process priorities above are all a run gets, and the reason is stated.
      expect(priority.cgroupReason).to.be.a("string").and.not.equal("");
      this.skip();
    }
    const dir = path.dirname(priority.cgroupProcs);
    if (!priority.cpuIdle) {
      // A kernel before 5.15: no cpu.idle, so the weighted group stands in.
      expect(existsSync(path.join(dir, "cpu.idle"))).to.equal(false);
      expect(path.basename(dir)).to.equal("market-sandbox-w10");
      this.skip();
    }
    expect(path.basename(dir)).to.equal("market-sandbox-idle");
    expect(readFileSync(path.join(dir, "cpu.idle"), "utf8").trim()).to.equal("1");
    expect(priority.cpuWeight).to.equal(null);
    // The processes of a short run (it may start slowly on a busy machine: the group runs only on idle CPU time).
    expect(await namesInside(engine, priority.cgroupProcs), "the sandbox's processes are in the cgroup").to.include.members(["bwrap", "sleep"]);
  });

  it("with SANDBOX_CPU_IDLE=0 runs inside the market-sandbox-w7 cgroup at the configured weight", async function () {
    const priority = weighted.priority();
    if (priority.cgroupProcs === null) {
      expect(priority.cgroupReason).to.be.a("string").and.not.equal("");
      this.skip();
    }
    const dir = path.dirname(priority.cgroupProcs);
    expect(path.basename(dir)).to.equal("market-sandbox-w7");
    expect(priority.cpuIdle).to.equal(false);
    if (existsSync(path.join(dir, "cpu.idle"))) expect(readFileSync(path.join(dir, "cpu.idle"), "utf8").trim()).to.equal("0");
    const weight =
      priority.cgroupVersion === "v1" ? readFileSync(path.join(dir, "cpu.shares"), "utf8") : readFileSync(path.join(dir, "cpu.weight"), "utf8");
    expect(Number(weight)).to.equal(priority.cgroupVersion === "v1" ? Math.round(7 * 10.24) : 7);
    expect(await namesInside(weighted, priority.cgroupProcs), "the sandbox's processes are in the cgroup").to.include.members(["bwrap", "sleep"]);
  });
});

/**
 * `market` and `@market/sdk` from another folder (issue 15, item 7): the package as `npm pack` makes it, installed in a
 * project of its own outside this repository with only the dependencies its package.json declares, runs its bin
 * (executable as built) through `npx`, and a script there imports it, against the live stack.
 */
import { expect } from "chai";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { stackFixture, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt } from "../support/cli";

const ROOT = path.resolve(__dirname, "../..");
const CORE = path.join(ROOT, "core");
const SDK = path.join(ROOT, "sdk");
const CLI = path.join(ROOT, "cli");

/** Runs a command without blocking this process (the API it calls listens here). */
function run(command: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** The poster's API key. */
const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster) }));

describe("@market/sdk installed in another folder", function () {
  this.timeout(180_000);
  let s: Stack;
  let posterKey: string;
  let app: string;

  before(function () {
    ensureCliBuilt();
    app = mkdtempSync(path.join(tmpdir(), "market-app-"));
    // The tarballs npm would publish (@market/core, which the other two depend on, @market/sdk, and @market/cli with
    // the `market` bin), unpacked where `npm install <tarball>` puts them, with their declared dependencies only (as an
    // install from the registry would bring them; @market/core is the packed one, never this repository's core/) and the
    // bin link.
    const tarballs: Record<string, string> = {};
    mkdirSync(path.join(app, "node_modules/.bin"), { recursive: true });
    for (const [name, folder] of [
      ["@market/core", CORE],
      ["@market/sdk", SDK],
      ["@market/cli", CLI],
    ] as const) {
      const tarball = execFileSync("npm", ["pack", "--silent", "--pack-destination", app], { cwd: folder, encoding: "utf8" })
        .trim()
        .split("\n")
        .at(-1)!;
      tarballs[name] = tarball;
      const installed = path.join(app, "node_modules", name);
      mkdirSync(installed, { recursive: true });
      execFileSync("tar", ["-xzf", path.join(app, tarball), "-C", installed, "--strip-components=1"]);
      const pkg = JSON.parse(readFileSync(path.join(installed, "package.json"), "utf8")) as {
        dependencies: Record<string, string>;
        bin?: Record<string, string>;
      };
      for (const dependency of Object.keys(pkg.dependencies)) {
        const link = path.join(app, "node_modules", dependency);
        if (existsSync(link)) continue;
        mkdirSync(path.dirname(link), { recursive: true });
        symlinkSync(path.join(ROOT, "node_modules", dependency), link);
      }
      if (pkg.bin?.market) symlinkSync(path.join("..", name, pkg.bin.market), path.join(app, "node_modules/.bin/market"));
    }
    writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "my-app", private: true, dependencies: tarballs }));
  });
  after(function () {
    rmSync(app, { recursive: true, force: true });
  });
  beforeEach(async function () {
    ({
      stack: s,
      seeded: { posterKey },
    } = await seededStack());
  });
  afterEach(async function () {
    await s.close();
  });

  it("ships its bin executable, and `npx market` runs from that folder against the stack", async function () {
    const bin = path.join(app, "node_modules/@market/cli/dist/cli/src/main.js");
    expect(statSync(bin).mode & 0o111, "executable as packed").to.equal(0o111);
    expect(readFileSync(bin, "utf8").split("\n")[0]).to.equal("#!/usr/bin/env node");

    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    const version = await run("npx", ["--no-install", "market", "--version"], { cwd: app, env });
    expect(version.status, version.stderr).to.equal(0);
    expect(version.stdout.trim()).to.equal("0.9.0");
    // The bin itself, executed (not through node): its mode and shebang are what run it.
    const tasks = await run(path.join(app, "node_modules/.bin/market"), ["tasks", "--json"], { cwd: app, env });
    expect(tasks.status, tasks.stderr).to.equal(0);
    expect(JSON.parse(tasks.stdout)).to.deep.equal({ role: "poster", tasks: [], more: false });
  });

  it("a script in that folder imports @market/sdk (and through it the packed @market/core) and calls the API", async function () {
    const env = await cliEnv(s, s.poster, { apiKey: posterKey });
    writeFileSync(
      path.join(app, "whoami.js"),
      `const { MarketClient, WorkerRuntime, formatUsdc } = require("@market/sdk");
       const client = new MarketClient({ apiKey: process.env.MARKET_API_KEY, baseUrl: process.env.MARKET_API_URL });
       const core = require("node:path").relative(process.cwd(), require.resolve("@market/core/errors"));
       client.whoami().then((address) => console.log(JSON.stringify({ address, runtime: typeof WorkerRuntime, usdc: formatUsdc(2500000n), core })));`,
    );
    const script = await run(process.execPath, ["whoami.js"], { cwd: app, env });
    expect(script.status, script.stderr).to.equal(0);
    // @market/core is the packed one, through its package.json "exports".
    expect(JSON.parse(script.stdout)).to.deep.equal({
      address: s.poster.address,
      runtime: "function",
      usdc: "2.5",
      core: "node_modules/@market/core/dist/core/errors.js",
    });
  });
});

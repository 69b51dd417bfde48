/**
 * A throwaway PostgreSQL server for a bench, as scripts/test-postgres.sh starts one: Debian's server binaries
 * (/usr/lib/postgresql/<version>/bin, the newest), a cluster initialised in a temporary folder, listening on 127.0.0.1
 * at a free port, stopped and removed by `stop()` (and when the process exits). The server refuses to run as root:
 * under root the cluster belongs to `nobody`. BENCH_DATABASE_URL names a server to use instead (nothing is started).
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "../../scripts/lib/local-chain";

export interface BenchPostgres {
  /** Connection string of the `postgres` database. */
  url: string;
  /** The server's version, as it reports it. */
  version: string;
  stop(): void;
}

function serverBinaries(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(a) - Number(b));
  const newest = versions.at(-1);
  return newest ? path.join(root, newest, "bin") : undefined;
}

/** Starts a server (or takes BENCH_DATABASE_URL's); undefined when no PostgreSQL server binaries are installed. */
export async function startBenchPostgres(): Promise<BenchPostgres | undefined> {
  if (process.env.BENCH_DATABASE_URL) return { url: process.env.BENCH_DATABASE_URL, version: "external", stop() {} };
  const bin = serverBinaries();
  if (!bin) return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), "market-bench-pg-"));
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  const nobody = asRoot ? Number(execFileSync("id", ["-u", "nobody"]).toString().trim()) : undefined;
  if (nobody !== undefined) chownSync(dir, nobody, nobody);
  const run = (command: string, args: string[]) => {
    const quoted = [path.join(bin, command), ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
    if (asRoot) execFileSync("su", ["nobody", "-s", "/bin/sh", "-c", quoted], { stdio: "ignore" });
    else execFileSync("/bin/sh", ["-c", quoted], { stdio: "ignore" });
  };
  const data = path.join(dir, "data");
  run("initdb", ["-D", data, "-U", "market", "--auth=trust"]);
  run("pg_ctl", ["-D", data, "-l", path.join(dir, "log"), "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, "-w", "start"]);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  process.once("exit", stop);
  const version = execFileSync(path.join(bin, "postgres"), ["--version"]).toString().trim();
  return { url: `postgres://market@127.0.0.1:${port}/postgres`, version, stop };
}

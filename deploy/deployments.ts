import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

/** What `deployments/<network>.json` records about one escrow deployment. Read by the server, the SDK and scripts. */
export interface EscrowDeployment {
  network: string;
  chainId: number;
  /** The proxy: the escrow's permanent address. */
  proxy: string;
  implementation: string;
  /** The contract the implementation was built from, e.g. `TaskEscrow`. */
  contract: string;
  version: string;
  /** Settlement token (the first allowed token). */
  token: string;
  /** True when the token is the mock deployed for a local chain. */
  mockToken: boolean;
  admin: string;
  verifier: string;
  treasury: string;
  feeBps: number;
  /** Block of the proxy deployment: where an indexer starts. */
  block: number;
  deployedAt: string;
  upgradedAt?: string;
}

/** `DEPLOYMENTS_DIR` moves the records elsewhere (tests use a temporary folder). */
export const DEPLOYMENTS_DIR = process.env.DEPLOYMENTS_DIR ?? path.resolve(__dirname, "..", "deployments");

export function deploymentPath(network: string, dir = DEPLOYMENTS_DIR): string {
  return path.join(dir, `${network}.json`);
}

export function readDeployment(network: string, dir = DEPLOYMENTS_DIR): EscrowDeployment | undefined {
  const file = deploymentPath(network, dir);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as EscrowDeployment;
}

/** Writes atomically (temp file, then rename) so a crash never leaves half a record. */
export function writeDeployment(deployment: EscrowDeployment, dir = DEPLOYMENTS_DIR): string {
  mkdirSync(dir, { recursive: true });
  const file = deploymentPath(deployment.network, dir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(deployment, null, 2)}\n`);
  renameSync(tmp, file);
  return file;
}

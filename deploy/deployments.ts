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
  /** The ERC-8004-compatible identity NFT deployed beside the escrow (see deploy/registries.ts). */
  identity?: IdentityDeployment;
  /** The reputation registry the escrow writes at settlement (see deploy/registries.ts). */
  reputation?: ReputationDeployment;
}

/** One registry behind its own UUPS proxy, recorded in the escrow's deployment file. */
export interface RegistryDeployment {
  proxy: string;
  implementation: string;
  /** `AgentIdentity` or `TaskReputation`. */
  contract: string;
  version: string;
  /** Holder of `DEFAULT_ADMIN_ROLE`: grants the roles below and upgrades. */
  admin: string;
  /** Block of the proxy deployment: where an indexer starts reading the registry's events. */
  block: number;
  deployedAt: string;
}

export interface IdentityDeployment extends RegistryDeployment {
  /** Accounts granted `MINTER_ROLE` by the deploy code (the service's minting key). */
  minters: string[];
}

export interface ReputationDeployment extends RegistryDeployment {
  /** Accounts granted `WRITER_ROLE` by the deploy code: the escrow proxy. */
  writers: string[];
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

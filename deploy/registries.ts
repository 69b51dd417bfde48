import type { HardhatRuntimeEnvironment } from "hardhat/types";
import type { Signer } from "ethers";
import {
  AgentIdentity__factory,
  TaskEscrow__factory,
  TaskReputation__factory,
  type AgentIdentity,
  type TaskEscrow,
  type TaskReputation,
} from "../typechain-types";
import {
  readDeployment,
  writeDeployment,
  type EscrowDeployment,
  type IdentityDeployment,
  type RegistryDeployment,
  type ReputationDeployment,
} from "./deployments";
import { LOCAL_CHAIN_IDS, deployEscrow, upgradeEscrow, type DeployEscrowOptions } from "./escrow";
import { deployUupsProxy, isLiveProxy, requireSigner } from "./proxy";

/** The first escrow version that writes a reputation registry. */
export const REPUTATION_ESCROW_MAJOR = 2;

export interface DeployRegistriesOptions {
  /** Holder of both registries' `DEFAULT_ADMIN_ROLE`; default: the escrow's admin. */
  admin?: string;
  /**
   * Granted `MINTER_ROLE` on the identity (the service's minting key). Default on local chains: the escrow's
   * marketplace verifier (the service's own key); elsewhere no minter is granted unless given.
   */
  minter?: string;
  /** The escrow deployment to build on; default: deployments/<network>.json, else a new escrow from `escrow`. */
  deployment?: EscrowDeployment;
  /** How to deploy the escrow when none is recorded (roles, token, fee), as for deploy/deploy.ts. */
  escrow?: Omit<DeployEscrowOptions, "save" | "dir" | "log">;
  /** Write `deployments/<network>.json`. Default: on every network but the in-process `hardhat` one. */
  save?: boolean;
  dir?: string;
  log?: (line: string) => void;
}

export interface DeployRegistriesResult {
  /** The escrow's record with its `identity` and `reputation` sections. */
  deployment: EscrowDeployment;
  escrow: TaskEscrow;
  identity: AgentIdentity;
  reputation: TaskReputation;
  /** What this run changed on chain, in order (empty when everything was already in place). */
  actions: string[];
}

/**
 * Puts the escrow, the identity NFT and the reputation registry in place on one chain and wires them, recording all
 * three in deployments/<network>.json:
 *   1. the escrow: the recorded one, else a new one (deployEscrow); upgraded to the current source when it predates
 *      2.0.0 (upgradeEscrow, validated by the upgrades plugin);
 *   2. AgentIdentity and TaskReputation behind UUPS proxies, unless live ones are recorded;
 *   3. wiring: the escrow in the reputation's writer set, the reputation as the escrow's registry, the minter's role
 *      on the identity; then `DEFAULT_ADMIN_ROLE` of each registry moves from the deployer to `admin`.
 * Idempotent: each step checks the chain first, so a second run sends nothing. The escrow admin's key signs the
 * upgrade and `setReputationRegistry`; the registries' admin key signs grants on registries deployed earlier.
 */
export async function deployRegistries(hre: HardhatRuntimeEnvironment, options: DeployRegistriesOptions = {}): Promise<DeployRegistriesResult> {
  const { ethers, network } = hre;
  const log = options.log ?? (() => {});
  const save = options.save ?? network.name !== "hardhat";
  const actions: string[] = [];
  const act = (line: string) => {
    actions.push(line);
    log(line);
  };
  const chainId = Number((await ethers.provider.getNetwork()).chainId);
  const [deployer] = await ethers.getSigners();
  if (!deployer) throw new Error(`no deployer account configured for network ${network.name}`);

  let deployment = options.deployment ?? (save ? readDeployment(network.name, options.dir) : undefined);
  if (!deployment || deployment.chainId !== chainId || !(await isLiveProxy(hre, deployment.proxy, "escrow"))) {
    const created = await deployEscrow(hre, { ...options.escrow, save, dir: options.dir, log });
    deployment = created.deployment;
    act(`escrow deployed at ${deployment.proxy}`);
  }

  const onChainVersion = await TaskEscrow__factory.connect(deployment.proxy, ethers.provider).version();
  if (Number(onChainVersion.split(".")[0]) < REPUTATION_ESCROW_MAJOR) {
    const upgraded = await upgradeEscrow(hre, { deployment, save: false, log });
    deployment = { ...upgraded.deployment, identity: deployment.identity, reputation: deployment.reputation };
    act(`escrow ${deployment.proxy} upgraded from ${onChainVersion} to ${deployment.version}`);
  }

  const escrowAdmin = await TaskEscrow__factory.connect(deployment.proxy, ethers.provider).admin();
  const admin = ethers.getAddress(options.admin ?? escrowAdmin);
  const local = LOCAL_CHAIN_IDS.includes(chainId);
  const minter = options.minter ? ethers.getAddress(options.minter) : local ? deployment.verifier : undefined;

  const identityRecord = await ensureRegistry(hre, deployment.identity, "AgentIdentity", admin, deployer, act);
  const reputationRecord = await ensureRegistry(hre, deployment.reputation, "TaskReputation", admin, deployer, act);
  const identity = AgentIdentity__factory.connect(identityRecord.proxy, deployer);
  const reputation = TaskReputation__factory.connect(reputationRecord.proxy, deployer);

  // Grants first, while the deployer still holds the admin role of registries it just deployed.
  const writerRole = await reputation.WRITER_ROLE();
  await ensureRole(hre, reputation, writerRole, deployment.proxy, "writer", act);
  const minterRole = await identity.MINTER_ROLE();
  if (minter) await ensureRole(hre, identity, minterRole, minter, "minter", act);

  const escrow = TaskEscrow__factory.connect(deployment.proxy, ethers.provider);
  if ((await escrow.reputationRegistry()) !== reputationRecord.proxy) {
    const signer = await requireSigner(hre, escrowAdmin, "escrow admin");
    await (await escrow.connect(signer).setReputationRegistry(reputationRecord.proxy)).wait();
    act(`escrow ${deployment.proxy} writes reputation to ${reputationRecord.proxy}`);
  }

  for (const registry of [identity, reputation]) await handOverAdmin(hre, registry, admin, deployer, act);

  const writers = [deployment.proxy];
  const minters = minter ? [minter] : [];
  deployment = {
    ...deployment,
    identity: { ...identityRecord, admin, minters: mergeAccounts(deployment.identity?.minters, minters) },
    reputation: { ...reputationRecord, admin, writers: mergeAccounts(deployment.reputation?.writers, writers) },
  };
  if (save) log(`deployment written to ${writeDeployment(deployment, options.dir)}`);
  return {
    deployment,
    escrow: TaskEscrow__factory.connect(deployment.proxy, deployer),
    identity,
    reputation,
    actions,
  };
}

/** A recorded live registry as it is, else a new one initialized with the deployer as its first admin. */
async function ensureRegistry<R extends IdentityDeployment | ReputationDeployment>(
  hre: HardhatRuntimeEnvironment,
  recorded: R | undefined,
  contract: "AgentIdentity" | "TaskReputation",
  admin: string,
  deployer: Signer,
  act: (line: string) => void,
): Promise<RegistryDeployment> {
  if (recorded && (await isLiveProxy(hre, recorded.proxy, contract))) return recorded;
  const record = await deployUupsProxy(hre, contract, [await deployer.getAddress()], deployer);
  act(`${contract} deployed at ${record.proxy} (implementation ${record.implementation})`);
  return { ...record, admin };
}

interface RoleContract {
  hasRole(role: string, account: string): Promise<boolean>;
  getAddress(): Promise<string>;
  DEFAULT_ADMIN_ROLE(): Promise<string>;
  connect(signer: Signer): {
    grantRole(role: string, account: string): Promise<{ wait(): Promise<unknown> }>;
    renounceRole(role: string, account: string): Promise<{ wait(): Promise<unknown> }>;
  };
}

/** Grants `role` to `account` unless it holds it, signed by a holder of the admin role among the configured keys. */
async function ensureRole(
  hre: HardhatRuntimeEnvironment,
  registry: RoleContract,
  role: string,
  account: string,
  name: string,
  act: (line: string) => void,
): Promise<void> {
  if (await registry.hasRole(role, account)) return;
  const signer = await adminSigner(hre, registry);
  await (await registry.connect(signer).grantRole(role, account)).wait();
  act(`${name} role on ${await registry.getAddress()} granted to ${account}`);
}

/** Moves `DEFAULT_ADMIN_ROLE` from the deployer to `admin` (grant, then renounce), when they differ. */
async function handOverAdmin(
  hre: HardhatRuntimeEnvironment,
  registry: RoleContract,
  admin: string,
  deployer: Signer,
  act: (line: string) => void,
): Promise<void> {
  const adminRole = await registry.DEFAULT_ADMIN_ROLE();
  const deployerAddress = await deployer.getAddress();
  const address = await registry.getAddress();
  if (!(await registry.hasRole(adminRole, admin))) {
    const signer = await adminSigner(hre, registry);
    await (await registry.connect(signer).grantRole(adminRole, admin)).wait();
    act(`admin role on ${address} granted to ${admin}`);
  }
  if (deployerAddress !== admin && (await registry.hasRole(adminRole, deployerAddress))) {
    await (await registry.connect(deployer).renounceRole(adminRole, deployerAddress)).wait();
    act(`admin role on ${address} renounced by the deployer ${deployerAddress}`);
  }
}

/** A configured key holding the registry's `DEFAULT_ADMIN_ROLE`: the deployer, `ADMIN_PRIVATE_KEY` or an account. */
async function adminSigner(hre: HardhatRuntimeEnvironment, registry: RoleContract): Promise<Signer> {
  const adminRole = await registry.DEFAULT_ADMIN_ROLE();
  const candidates = await hre.ethers.getSigners();
  const key = process.env.ADMIN_PRIVATE_KEY;
  const signers: Signer[] = key ? [new hre.ethers.Wallet(key, hre.ethers.provider), ...candidates] : candidates;
  for (const signer of signers) {
    if (await registry.hasRole(adminRole, await signer.getAddress())) return signer;
  }
  throw new Error(`no configured key holds the admin role of ${await registry.getAddress()} (set ADMIN_PRIVATE_KEY to its key)`);
}

function mergeAccounts(recorded: string[] | undefined, added: string[]): string[] {
  return [...new Set([...(recorded ?? []), ...added])];
}

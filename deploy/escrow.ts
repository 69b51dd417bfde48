import type { HardhatRuntimeEnvironment } from "hardhat/types";
import type { Signer } from "ethers";
import { MockUSDC__factory, TaskEscrow__factory, type TaskEscrow } from "../typechain-types";
import { readDeployment, writeDeployment, type EscrowDeployment } from "./deployments";
import { findSigner, isLiveProxy } from "./proxy";

export { findSigner } from "./proxy";

/** The chain id of `npm start`'s local `0g` chain: its own, as the real 0g's differs from arc's. */
export const LOCAL_0G_CHAIN_ID = 31338;
/** Chain ids of local development chains: the only places a mock token is deployed. */
export const LOCAL_CHAIN_IDS: readonly number[] = [31337, LOCAL_0G_CHAIN_ID, 1337];
export const DEFAULT_FEE_BPS = 1000;
/** The escrow contract the deploy and upgrade code use unless told otherwise: the current source. */
export const ESCROW_CONTRACT = "TaskEscrow";

/**
 * Where the source of an escrow released earlier lives now, by the contract name and version its deployment record
 * holds: records written by the deploy code of 1.0.0, 2.0.0 and 3.0.0 say `TaskEscrow`, whose sources are now
 * contracts/test/v1/TaskEscrowV1.sol, contracts/test/v2/TaskEscrowV2.sol and contracts/test/v3/TaskEscrowV3.sol.
 */
export const RELEASED_ESCROW_SOURCES: Readonly<Record<string, string>> = {
  "TaskEscrow@1.0.0": "TaskEscrowV1",
  "TaskEscrow@2.0.0": "TaskEscrowV2",
  "TaskEscrow@3.0.0": "TaskEscrowV3",
};

/** The contract in this checkout whose code a recorded deployment runs. */
export function deployedSourceOf(deployment: Pick<EscrowDeployment, "contract" | "version">): string {
  return RELEASED_ESCROW_SOURCES[`${deployment.contract}@${deployment.version}`] ?? deployment.contract;
}

export interface DeployEscrowOptions {
  /** Escrow roles; on a local chain they default to the first three accounts (admin, verifier, treasury). */
  admin?: string;
  verifier?: string;
  treasury?: string;
  feeBps?: number;
  /** Settlement token; required off local chains, where a mock USDC is deployed when it is missing. */
  token?: string;
  /** Contract to deploy; default `TaskEscrow` (the current source). Tests deploy `TaskEscrowV1` to upgrade it. */
  contract?: string;
  /** Write `deployments/<network>.json`. Default: on every network but the in-process `hardhat` one. */
  save?: boolean;
  /** Where deployment records live (tests point this at a temporary folder). */
  dir?: string;
  log?: (line: string) => void;
}

export interface DeployEscrowResult {
  deployment: EscrowDeployment;
  escrow: TaskEscrow;
  /** False when a live deployment was already recorded and nothing was sent. */
  created: boolean;
}

/**
 * Deploys the escrow behind a UUPS proxy (and a mock USDC on local chains), then records it.
 * Idempotent: when the network already has a recorded deployment whose proxy is live, nothing is sent. A record whose
 * address has no code (a local chain that restarted) is replaced; one whose address holds code that is not an
 * ERC-1967 proxy is refused rather than trusted or replaced.
 */
export async function deployEscrow(hre: HardhatRuntimeEnvironment, options: DeployEscrowOptions = {}): Promise<DeployEscrowResult> {
  const { ethers, upgrades, network } = hre;
  const log = options.log ?? (() => {});
  const save = options.save ?? network.name !== "hardhat";
  const chainId = Number((await ethers.provider.getNetwork()).chainId);
  const [deployer, ...others] = await ethers.getSigners();
  if (!deployer) throw new Error(`no deployer account configured for network ${network.name}`);

  const existing = save ? readDeployment(network.name, options.dir) : undefined;
  if (existing && existing.chainId === chainId && (await isLiveProxy(hre, existing.proxy, "escrow"))) {
    log(`escrow already deployed on ${network.name} at ${existing.proxy}; nothing sent`);
    return { deployment: existing, escrow: TaskEscrow__factory.connect(existing.proxy, deployer), created: false };
  }

  const local = LOCAL_CHAIN_IDS.includes(chainId);
  const role = (given: string | undefined, name: string, localDefault: Signer | undefined) => {
    if (given) return ethers.getAddress(given);
    if (local && localDefault) return localDefault.getAddress();
    throw new Error(`${name} address is required on network ${network.name} (chainId ${chainId})`);
  };
  const admin = await role(options.admin, "admin", deployer);
  const verifier = await role(options.verifier, "verifier", others[0]);
  const treasury = await role(options.treasury, "treasury", others[1]);
  const feeBps = options.feeBps ?? DEFAULT_FEE_BPS;

  let token = options.token ? ethers.getAddress(options.token) : undefined;
  const mockToken = !token;
  if (!token) {
    if (!local) throw new Error(`token address is required on network ${network.name} (chainId ${chainId})`);
    const usdc = await new MockUSDC__factory(deployer).deploy();
    await usdc.waitForDeployment();
    token = await usdc.getAddress();
    log(`mock USDC deployed at ${token}`);
  }

  const contract = options.contract ?? ESCROW_CONTRACT;
  const factory = await ethers.getContractFactory(contract, deployer);
  const proxy = await upgrades.deployProxy(factory, [admin, verifier, treasury, feeBps, token], {
    kind: "uups",
    initializer: "initialize",
  });
  await proxy.waitForDeployment();
  const proxyAddress = await proxy.getAddress();
  const receipt = await proxy.deploymentTransaction()?.wait();
  const escrow = TaskEscrow__factory.connect(proxyAddress, deployer);

  const deployment: EscrowDeployment = {
    network: network.name,
    chainId,
    proxy: proxyAddress,
    implementation: await upgrades.erc1967.getImplementationAddress(proxyAddress),
    contract,
    version: await escrow.version(),
    token,
    mockToken,
    admin,
    verifier,
    treasury,
    feeBps,
    block: receipt?.blockNumber ?? (await ethers.provider.getBlockNumber()),
    deployedAt: new Date().toISOString(),
  };
  if (save) log(`deployment written to ${writeDeployment(deployment, options.dir)}`);
  log(`escrow proxy ${proxyAddress} (implementation ${deployment.implementation})`);
  return { deployment, escrow, created: true };
}

export interface UpgradeEscrowOptions {
  /** Contract to upgrade to; default `TaskEscrow` (the current source). */
  contract?: string;
  /** Deployment to upgrade when it is not read from `deployments/<network>.json`. */
  deployment?: EscrowDeployment;
  /** Signs as the escrow admin; default: the configured account whose address is the on-chain admin. */
  admin?: Signer;
  /** `always` deploys a fresh implementation even when the bytecode is unchanged. */
  redeployImplementation?: "always" | "onchange";
  save?: boolean;
  dir?: string;
  log?: (line: string) => void;
}

/**
 * Validates the new implementation against the deployed one with the upgrades plugin, then upgrades the proxy from
 * the admin key (no delay) and records the new implementation.
 */
export async function upgradeEscrow(
  hre: HardhatRuntimeEnvironment,
  options: UpgradeEscrowOptions = {},
): Promise<{ deployment: EscrowDeployment; escrow: TaskEscrow }> {
  const { ethers, upgrades, network } = hre;
  const log = options.log ?? (() => {});
  const save = options.save ?? network.name !== "hardhat";
  const current = options.deployment ?? readDeployment(network.name, options.dir);
  if (!current) throw new Error(`no escrow deployment recorded for network ${network.name}`);

  const onChainAdmin = await TaskEscrow__factory.connect(current.proxy, ethers.provider).admin();
  const admin = options.admin ?? (await findSigner(hre, onChainAdmin));
  if (!admin || (await admin.getAddress()) !== onChainAdmin) {
    throw new Error(`the admin key for ${onChainAdmin} is not configured (set ADMIN_PRIVATE_KEY)`);
  }

  const contract = options.contract ?? ESCROW_CONTRACT;
  const next = await ethers.getContractFactory(contract, admin);
  try {
    await upgrades.validateUpgrade(current.proxy, next, { kind: "uups" });
  } catch (error) {
    if (!(error instanceof Error) || !/is not registered/.test(error.message)) throw error;
    // A fork, or a checkout without the plugin's manifest: register the deployed implementation from the contract
    // the deployment record names, then validate against it. Registering trusts that contract's storage layout, so
    // it must be the code actually deployed; otherwise the validation would only compare the new code with itself.
    const source = deployedSourceOf(current);
    await assertDeployedCodeIs(hre, source, await upgrades.erc1967.getImplementationAddress(current.proxy));
    log(`registering ${current.proxy} with the upgrades plugin as ${source}`);
    await upgrades.forceImport(current.proxy, await ethers.getContractFactory(source, admin), {
      kind: "uups",
    });
    await upgrades.validateUpgrade(current.proxy, next, { kind: "uups" });
  }
  log(`upgrade to ${contract} validated`);

  await upgrades.upgradeProxy(current.proxy, next, {
    kind: "uups",
    redeployImplementation: options.redeployImplementation ?? "onchange",
  });
  const escrow = TaskEscrow__factory.connect(current.proxy, admin);
  const deployment: EscrowDeployment = {
    ...current,
    implementation: await upgrades.erc1967.getImplementationAddress(current.proxy),
    contract,
    version: await escrow.version(),
    upgradedAt: new Date().toISOString(),
  };
  if (save) writeDeployment(deployment, options.dir);
  log(`escrow ${current.proxy} now runs ${contract} ${deployment.version} at ${deployment.implementation}`);
  return { deployment, escrow };
}

/**
 * Throws unless the runtime code at `implementation` is exactly what `contract` compiles to in this checkout, its
 * immutables (such as UUPS's own address) and the trailing CBOR metadata (a hash of the source, which a renamed copy
 * of a released contract changes without changing one instruction) aside.
 */
export async function assertDeployedCodeIs(hre: HardhatRuntimeEnvironment, contract: string, implementation: string): Promise<void> {
  const artifact = await hre.artifacts.readArtifact(contract);
  const buildInfo = await hre.artifacts.getBuildInfo(`${artifact.sourceName}:${artifact.contractName}`);
  const compiled = buildInfo?.output.contracts[artifact.sourceName]?.[artifact.contractName]?.evm.deployedBytecode;
  if (!compiled) throw new Error(`no build information for ${contract}; compile first`);
  const masked = (code: string) => {
    const bytes = hre.ethers.getBytes(code);
    for (const ranges of Object.values(compiled.immutableReferences ?? {})) {
      for (const { start, length } of ranges) bytes.fill(0, start, start + length);
    }
    // The code ends with the metadata's CBOR encoding followed by its length in two bytes.
    const metadataLength = bytes.length >= 2 ? ((bytes[bytes.length - 2]! << 8) | bytes[bytes.length - 1]!) + 2 : 0;
    return hre.ethers.hexlify(bytes.subarray(0, Math.max(0, bytes.length - metadataLength)));
  };
  const deployed = await hre.ethers.provider.getCode(implementation);
  if (masked(deployed) !== masked(`0x${compiled.object}`)) {
    throw new Error(
      `the implementation at ${implementation} is not ${contract} as compiled here, so its storage layout is unknown ` +
        "and the upgrade cannot be validated: restore the upgrades plugin's manifest (.openzeppelin/) for this " +
        "network, or check out the source that was deployed and record its contract name",
    );
  }
}

import type { HardhatRuntimeEnvironment } from "hardhat/types";
import type { Signer } from "ethers";

/** bytes32(uint256(keccak256("eip1967.proxy.implementation")) - 1) */
export const ERC1967_IMPLEMENTATION_SLOT = "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";

/** What a deployment record says about one contract behind a UUPS proxy. */
export interface ProxyRecord {
  /** The proxy: the contract's permanent address. */
  proxy: string;
  implementation: string;
  /** The contract the implementation was built from, e.g. `TaskEscrow`. */
  contract: string;
  version: string;
  /** Block of the proxy deployment: where an indexer starts. */
  block: number;
  deployedAt: string;
  upgradedAt?: string;
}

/**
 * Whether a recorded proxy is live on this chain: false when the address has no code (a local chain that restarted,
 * so the record may be replaced); throws when the code there is not an ERC-1967 proxy, which is refused rather than
 * trusted or replaced.
 */
export async function isLiveProxy(hre: HardhatRuntimeEnvironment, address: string, what: string): Promise<boolean> {
  const { provider } = hre.ethers;
  if ((await provider.getCode(address)) === "0x") return false;
  const slot = await provider.getStorage(address, ERC1967_IMPLEMENTATION_SLOT);
  if (BigInt(slot) === 0n) {
    throw new Error(
      `the deployment record for ${hre.network.name} names ${address} as the ${what}, but the code there is not an ` +
        "ERC-1967 proxy: move the record away to deploy afresh",
    );
  }
  return true;
}

/** Deploys `contract` behind a UUPS proxy with `initialize(...args)` and describes it for the deployment record. */
export async function deployUupsProxy(hre: HardhatRuntimeEnvironment, contract: string, args: unknown[], deployer: Signer): Promise<ProxyRecord> {
  const { ethers, upgrades } = hre;
  const factory = await ethers.getContractFactory(contract, deployer);
  const proxy = await upgrades.deployProxy(factory, args, { kind: "uups", initializer: "initialize" });
  await proxy.waitForDeployment();
  const address = await proxy.getAddress();
  const receipt = await proxy.deploymentTransaction()?.wait();
  const versioned = new ethers.Contract(address, ["function version() view returns (string)"], ethers.provider);
  return {
    proxy: address,
    implementation: await upgrades.erc1967.getImplementationAddress(address),
    contract,
    version: String(await versioned.getFunction("version")()),
    block: receipt?.blockNumber ?? (await ethers.provider.getBlockNumber()),
    deployedAt: new Date().toISOString(),
  };
}

/** The configured signer for `address`: `ADMIN_PRIVATE_KEY` when it matches, else one of the network's accounts. */
export async function findSigner(hre: HardhatRuntimeEnvironment, address: string): Promise<Signer | undefined> {
  const key = process.env.ADMIN_PRIVATE_KEY;
  if (key) {
    const wallet = new hre.ethers.Wallet(key, hre.ethers.provider);
    if (wallet.address === address) return wallet;
  }
  for (const signer of await hre.ethers.getSigners()) {
    if ((await signer.getAddress()) === address) return signer;
  }
  return undefined;
}

/** The signer for `address`, or an error naming the key to configure. */
export async function requireSigner(hre: HardhatRuntimeEnvironment, address: string, role: string): Promise<Signer> {
  const signer = await findSigner(hre, address);
  if (!signer) throw new Error(`the ${role} key for ${address} is not configured (set ADMIN_PRIVATE_KEY)`);
  return signer;
}

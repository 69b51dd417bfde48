/**
 * `npm start`: the product on an embedded default. Starts a local Hardhat chain on 127.0.0.1:8545, deploys mock USDC
 * and the escrow with the real deploy code, funds demo accounts with mock USDC, prints every address, and runs until
 * Ctrl-C.
 */
import hre from "hardhat";
import { deployEscrow } from "../deploy/escrow";
import { MockUSDC__factory } from "../typechain-types";
import { startLocalChain } from "./lib/local-chain";

const CHAIN_PORT = Number(process.env.MARKET_CHAIN_PORT ?? 8545);
const DEMO_USDC = 10_000n * 10n ** 6n;

async function main() {
  if (hre.network.name !== "localhost") throw new Error("run with --network localhost (npm start does)");
  const chain = await startLocalChain({ port: CHAIN_PORT });
  const stop = () => {
    chain.stop();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);

  const { deployment } = await deployEscrow(hre, { log: (line) => console.log(`  ${line}`) });
  const signers = await hre.ethers.getSigners();
  const demo = signers.slice(3, 8);
  const usdc = MockUSDC__factory.connect(deployment.token, signers[0]);
  for (const account of demo) await (await usdc.mint(account.address, DEMO_USDC)).wait();

  const keys = chain.accounts;
  console.log(`
Local chain   ${chain.url}  (chainId ${deployment.chainId})
Escrow        ${deployment.proxy}  (implementation ${deployment.implementation}, v${deployment.version})
Mock USDC     ${deployment.token}
Admin         ${deployment.admin}
Verifier      ${deployment.verifier}
Treasury      ${deployment.treasury}
Fee           ${deployment.feeBps} bps
Deployment    deployments/${deployment.network}.json

Demo accounts, ${DEMO_USDC / 10n ** 6n} USDC each (well-known Hardhat test keys: never use them elsewhere):
${demo.map((s, i) => `  ${s.address}  ${keys[i + 3] ?? ""}`).join("\n")}

Press Ctrl-C to stop.`);
  await new Promise(() => {});
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

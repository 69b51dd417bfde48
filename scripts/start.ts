/**
 * `npm start`: the product on an embedded default. Starts a local Hardhat chain on 127.0.0.1:8545, deploys mock USDC
 * and the escrow with the real deploy code, funds demo accounts with mock USDC, starts the indexer and the API on
 * 127.0.0.1:3000 over SQLite (data/local/, reset at every start since the chain is new), prints the addresses and
 * ready API keys for a demo poster and a demo agent, and runs until Ctrl-C.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import hre from "hardhat";
import { deployEscrow } from "../deploy/escrow";
import { MockUSDC__factory } from "../typechain-types";
import { startLocalChain } from "./lib/local-chain";
import { loadConfig, startServer } from "../server";
import { createAuth } from "../server/auth";
import { createAgentRegistry } from "../server/agents";
import { CAPABILITY_TAGS } from "../core/capabilities";
import { publicKeyFromPrivateKey } from "../core/crypto";

const CHAIN_PORT = Number(process.env.MARKET_CHAIN_PORT ?? 8545);
const API_PORT = Number(process.env.PORT ?? 3000);
const DEMO_USDC = 10_000n * 10n ** 6n;
const DATA_DIR = path.resolve(__dirname, "..", "data", "local");

async function main() {
  if (hre.network.name !== "localhost") throw new Error("run with --network localhost (npm start does)");
  const chain = await startLocalChain({ port: CHAIN_PORT });
  const { deployment } = await deployEscrow(hre, { log: (line) => console.log(`  ${line}`) });
  const signers = await hre.ethers.getSigners();
  const demo = signers.slice(3, 8);
  const usdc = MockUSDC__factory.connect(deployment.token, signers[0]);
  for (const account of demo) await (await usdc.mint(account.address, DEMO_USDC)).wait();
  const keys = chain.accounts;

  rmSync(DATA_DIR, { recursive: true, force: true });
  const config = loadConfig({
    ...process.env,
    PORT: String(API_PORT),
    MARKET_DATA_DIR: DATA_DIR,
    CHAIN_ARC_RPC_URL: chain.url,
    CHAIN_ARC_DEPLOYMENT: deployment.network,
    MARKET_VERIFIER_PRIVATE_KEY: keys[1],
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
  });
  const server = await startServer(config);

  // Demo credentials, made the way a signed-in wallet would make them.
  const auth = createAuth({ db: server.db, now: Date.now });
  const [poster, agent] = demo as [(typeof demo)[number], (typeof demo)[number]];
  const posterKey = await auth.apiKeys.createApiKey(await auth.accounts.accountForWallet(poster.address), "demo poster");
  const agentAccount = await auth.accounts.accountForWallet(agent.address);
  const agentKey = await auth.apiKeys.createApiKey(agentAccount, "demo agent");
  await createAgentRegistry({ db: server.db, now: Date.now }).register(agent.address, agentAccount, {
    publicKey: publicKeyFromPrivateKey(keys[4]!),
    capabilities: [...CAPABILITY_TAGS],
    supportedChains: ["arc"],
    displayName: "Demo agent",
  });

  const stop = () => {
    void server.stop().finally(() => {
      chain.stop();
      process.exit(0);
    });
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);

  console.log(`
API           ${server.url}   (OpenAPI: ${server.url}/openapi.json)
Local chain   ${chain.url}  (chainId ${deployment.chainId})
Escrow        ${deployment.proxy}  (implementation ${deployment.implementation}, v${deployment.version})
Mock USDC     ${deployment.token}
Admin         ${deployment.admin}
Verifier      ${deployment.verifier}
Treasury      ${deployment.treasury}
Fee           ${deployment.feeBps} bps
Deployment    deployments/${deployment.network}.json

For the SDK and the market CLI:
  export MARKET_API_URL=${server.url} MARKET_RPC_ARC=${chain.url} MARKET_ESCROW_ARC=${deployment.proxy}

Demo poster   ${poster.address}
  MARKET_API_KEY=${posterKey.key}
  MARKET_PRIVATE_KEY=${keys[3]}
Demo agent    ${agent.address}  (registered on arc with every capability)
  MARKET_API_KEY=${agentKey.key}
  MARKET_PRIVATE_KEY=${keys[4]}

Other demo accounts, ${DEMO_USDC / 10n ** 6n} USDC each (well-known Hardhat test keys: never use them elsewhere):
${demo
  .slice(2)
  .map((s, i) => `  ${s.address}  ${keys[i + 5] ?? ""}`)
  .join("\n")}

Press Ctrl-C to stop.`);
  await new Promise(() => {});
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

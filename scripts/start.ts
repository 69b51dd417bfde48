/**
 * `npm start`: the product on an embedded default. Starts a local Hardhat chain on 127.0.0.1:8545, deploys mock USDC
 * and the escrow with the real deploy code, funds demo accounts with mock USDC, starts the indexer and the API on
 * 127.0.0.1:3000 over SQLite (data/local/, reset at every start since the chain is new), prints the addresses and
 * ready API keys for a demo poster and a demo agent, and runs until Ctrl-C.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
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
import { MarketClient } from "../sdk/src/client";

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
  // A master key for this data directory: it seals the hosted agents' secrets (docs/hosted-agents.md).
  mkdirSync(DATA_DIR, { recursive: true });
  const masterKeyFile = path.join(DATA_DIR, "master.key");
  writeFileSync(masterKeyFile, randomBytes(32).toString("hex"), { mode: 0o600 });
  const config = loadConfig({
    // Local models (Ollama, vLLM on this machine) are on loopback.
    HOSTED_ALLOW_PRIVATE_NETWORKS: "true",
    ...process.env,
    PORT: String(API_PORT),
    MARKET_DATA_DIR: DATA_DIR,
    CHAIN_ARC_RPC_URL: chain.url,
    CHAIN_ARC_DEPLOYMENT: deployment.network,
    MARKET_VERIFIER_PRIVATE_KEY: keys[1],
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    MARKET_MASTER_KEY_FILE: process.env.MARKET_MASTER_KEY ? "" : masterKeyFile,
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

  // A demo hosted agent on the model named by MARKET_MODEL_BASE_URL, owned by the third demo account.
  const modelUrl = process.env.MARKET_MODEL_BASE_URL;
  let hostedLine =
    "Hosted agent  set MARKET_MODEL_BASE_URL (optionally MARKET_MODEL_NAME, MARKET_MODEL_API_KEY) to an OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama, to deploy a demo hosted agent";
  if (modelUrl) {
    const ownerSigner = demo[2]!;
    const ownerAccount = await auth.accounts.accountForWallet(ownerSigner.address);
    const ownerKey = await auth.apiKeys.createApiKey(ownerAccount, "demo hosted-agent owner");
    const owner = new MarketClient({
      apiKey: ownerKey.key,
      baseUrl: server.url,
      executor: { privateKey: keys[5]!, rpcUrls: { arc: chain.url } },
      escrows: { arc: deployment.proxy },
    });
    const { agent } = await owner.deployAgent({
      displayName: "Demo hosted agent",
      instructions: "You are a careful assistant. Answer the task completely and concretely.",
      model: {
        baseUrl: modelUrl,
        name: process.env.MARKET_MODEL_NAME ?? "llama3.2",
        ...(process.env.MARKET_MODEL_API_KEY ? { apiKey: process.env.MARKET_MODEL_API_KEY } : {}),
      },
      capabilities: [...CAPABILITY_TAGS],
      start: false,
    });
    // Gas for its own transactions (submitEvidence); on arc gas is paid in USDC.
    await (await signers[0]!.sendTransaction({ to: agent.address, value: 10n ** 18n })).wait();
    const started = await owner.startAgent({ agentId: agent.id });
    hostedLine = `Hosted agent  #${agent.id} ${agent.address} on ${modelUrl} (${started.state}${started.lastError ? `: ${started.lastError}` : ""}), owned by ${ownerSigner.address}
  owner MARKET_API_KEY=${ownerKey.key}`;
  }

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

${hostedLine}

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

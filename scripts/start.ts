/**
 * `npm start`: the product on an embedded default. Starts a local Hardhat chain as `arc` on 127.0.0.1:8545 and a
 * second one as `0g` on 127.0.0.1:8546 (`MARKET_0G_CHAIN_PORT`), deploys mock USDC and the escrow on `arc` with the
 * real deploy code, and on `0g` the escrow (4.0.0) with the identity NFT and the reputation registry, wired, with the
 * real registries deploy command (deploy/deploy-registries.ts); funds demo accounts with mock USDC on both, starts an
 * indexer per chain and the API on 127.0.0.1:3000 over SQLite (data/local/, reset at every start since the chains are
 * new), prints the addresses and ready API keys for a demo poster and a demo agent, and runs until Ctrl-C.
 * `MARKET_CHAIN_PORT` moves `arc`'s chain and every `--network localhost` command with it; `MARKET_LOCAL_DATA_DIR` moves
 * the data folder, which holds everything a stack writes (the database, blobs, master key and both deployment records),
 * so two stacks from one clone never share a file. It prints a line per phase, then the next steps (the exports, the
 * keys, the README's first commands and the MCP config), and stops in order on Ctrl-C (the API, then the chains).
 *
 * It touches nothing until every port is free and it holds the lock on the data folder, so a second `npm start` on
 * the same ports or folder refuses with one line instead of taking over the first one's chains and data.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import hre from "hardhat";
import { JsonRpcProvider, Wallet } from "ethers";
import { deployEscrow, LOCAL_0G_CHAIN_ID } from "../deploy/escrow";
import { readDeployment, type EscrowDeployment } from "../deploy/deployments";
import { MockUSDC__factory } from "../typechain-types";
import { lockDirectory, portIsFree, startLocalChain, whenStartersDie, type LocalChain } from "./lib/local-chain";
import { loadConfig, startServer } from "../server";
import { createAuth } from "../server/auth";
import { createAgentRegistry } from "../server/agents";
import { CAPABILITY_TAGS } from "@market/core/capabilities";
import { publicKeyFromPrivateKey } from "@market/core/crypto";
import { MarketClient } from "../sdk/src/client";
import { mcpClientConfig } from "../cli/src/mcp-config";
import { webBuilt } from "../server/web";

/** The `0g` chain's port: the one setting that moves it (node, deployment, server and the printed exports). */
const ZERO_G_CHAIN_PORT = Number(process.env.MARKET_0G_CHAIN_PORT ?? 8546);
const API_PORT = Number(process.env.PORT ?? 3000);
const DEMO_USDC = 10_000n * 10n ** 6n;
const DATA_DIR = path.resolve(process.env.MARKET_LOCAL_DATA_DIR ?? path.join(__dirname, "..", "data", "local"));
/** The deployment records (`localhost.json`, `0g.json`): under the data folder, reset with it, unless DEPLOYMENTS_DIR says. */
const DEPLOYMENTS = path.resolve(process.env.DEPLOYMENTS_DIR || path.join(DATA_DIR, "deployments"));
const PHASES = 5;
const started = Date.now();
/** One progress line per phase, with the seconds since the start. */
function phase(n: number, what: string) {
  console.log(`npm start [${n}/${PHASES}] ${what} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}

/** The port of the `localhost` network (hardhat.config.ts: `MARKET_CHAIN_PORT`, default 8545), which must be local. */
function chainPort(): number {
  const config = hre.network.config as { url?: string };
  const url = new URL(config.url ?? "http://127.0.0.1:8545");
  if (!["127.0.0.1", "localhost"].includes(url.hostname)) throw new Error(`LOCAL_RPC_URL ${url.href} is not on 127.0.0.1`);
  return Number(url.port || 80);
}

async function main() {
  if (hre.network.name !== "localhost") throw new Error("run with --network localhost (npm start does)");
  const CHAIN_PORT = chainPort();
  for (const [port, variable] of [
    [CHAIN_PORT, "MARKET_CHAIN_PORT"],
    [ZERO_G_CHAIN_PORT, "MARKET_0G_CHAIN_PORT"],
    [API_PORT, "PORT"],
  ] as const) {
    if (!(await portIsFree(port))) {
      throw new Error(
        `npm start: port ${port} on 127.0.0.1 is in use (another npm start?); nothing was changed. Stop it, or set ${variable} (and MARKET_LOCAL_DATA_DIR) to run a second stack.`,
      );
    }
  }
  console.log(
    `npm start: a fresh local stack in ${DATA_DIR}. Every start resets all its state: new chains, an empty database and new keys, so keys printed by an earlier start answer INVALID_TOKEN and a results journal from one JOURNAL_MISMATCH.`,
  );
  try {
    lockDirectory(DATA_DIR);
  } catch (error) {
    throw new Error(`npm start: ${(error as Error).message}; nothing was changed. Stop it, or set MARKET_LOCAL_DATA_DIR.`, { cause: error });
  }
  phase(1, `starting the local chains: arc on 127.0.0.1:${CHAIN_PORT}, 0g on 127.0.0.1:${ZERO_G_CHAIN_PORT}`);
  const chain = await startLocalChain({ port: CHAIN_PORT });
  // Its own chain id, as the real 0g's differs from arc's: a transaction or a record for one chain is refused on the other.
  const zeroG = await startLocalChain({ port: ZERO_G_CHAIN_PORT, chainId: LOCAL_0G_CHAIN_ID });
  rmSync(DATA_DIR, { recursive: true, force: true });
  phase(2, "deploying mock USDC and the escrow on arc");
  const { deployment } = await deployEscrow(hre, { log: (line) => console.log(`  ${line}`), dir: DEPLOYMENTS });
  const signers = await hre.ethers.getSigners();
  const demo = signers.slice(3, 8);
  const usdc = MockUSDC__factory.connect(deployment.token, signers[0]);
  for (const account of demo) await (await usdc.mint(account.address, DEMO_USDC)).wait();
  const keys = chain.accounts;
  phase(3, "deploying the escrow, the identity NFT and the reputation registry on 0g");
  const zeroGDeployment = await deployZeroG(
    zeroG,
    demo.map((s) => s.address),
  );

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
    // The local 0g record lives under data/local/ (a real deployments/0g.json is never touched): named here in full.
    CHAIN_0G_RPC_URL: zeroG.url,
    CHAIN_0G_DEPLOYMENT: "local-0g-unrecorded",
    CHAIN_0G_ESCROW: zeroGDeployment.proxy,
    CHAIN_0G_TOKEN: zeroGDeployment.token,
    CHAIN_0G_CHAIN_ID: String(zeroGDeployment.chainId),
    CHAIN_0G_START_BLOCK: String(zeroGDeployment.block),
    CHAIN_0G_IDENTITY: zeroGDeployment.identity!.proxy,
    CHAIN_0G_REPUTATION: zeroGDeployment.reputation!.proxy,
    MARKET_VERIFIER_PRIVATE_KEY: keys[1],
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    MARKET_MASTER_KEY_FILE: process.env.MARKET_MASTER_KEY ? "" : masterKeyFile,
    DEPLOYMENTS_DIR: DEPLOYMENTS,
  });
  phase(4, `starting the indexers and the API on 127.0.0.1:${API_PORT}`);
  const server = await startServer(config);
  phase(5, `demo accounts and keys${process.env.MARKET_MODEL_BASE_URL ? ", the demo hosted agent" : ""}`);

  // Demo credentials, made the way a signed-in wallet would make them.
  const auth = createAuth({ db: server.db, now: Date.now });
  const [poster, agent] = demo as [(typeof demo)[number], (typeof demo)[number]];
  const posterKey = await auth.apiKeys.createApiKey(await auth.accounts.accountForWallet(poster.address), "demo poster");
  const agentAccount = await auth.accounts.accountForWallet(agent.address);
  const agentKey = await auth.apiKeys.createApiKey(agentAccount, "demo agent");
  await createAgentRegistry({ db: server.db, now: Date.now }).register(agent.address, agentAccount, {
    publicKey: publicKeyFromPrivateKey(keys[4]!),
    capabilities: [...CAPABILITY_TAGS],
    supportedChains: ["arc", "0g"],
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
    hostedLine = `Hosted agent  #${agent.id} ${agent.address} on ${modelUrl} (${started.state}${started.lastError ? `: ${started.lastError}` : ""}); its wallet was sent 1 ETH of gas
Its owner     ${ownerSigner.address} (manages it: GET /api/v1/agents/mine, stop, withdraw)
  export MARKET_API_KEY=${ownerKey.key}
  export MARKET_PRIVATE_KEY=${keys[5]}`;
  }

  // Every hosted agent deployed on this stack (the demo one, or yours through the SDK's deployAgent or POST
  // /api/v1/agents) gets 1 ETH of gas on arc: its wallet starts empty, and an agent without gas takes no task.
  const gasFunder = signers[0]!;
  const funded = new Set<string>();
  const fundAgents = async () => {
    const agents = await server.db.selectFrom("hosted_agents").select("address").where("state", "!=", "deleted").execute();
    for (const { address } of agents) {
      if (funded.has(address)) continue;
      funded.add(address);
      if ((await hre.ethers.provider.getBalance(address)) > 0n) continue;
      await (await gasFunder.sendTransaction({ to: address, value: 10n ** 18n })).wait();
      console.log(`npm start: sent 1 ETH of gas on arc to hosted agent ${address}`);
    }
  };
  const gasTimer = setInterval(() => void fundAgents().catch(() => undefined), 2_000);

  let stopping = false;
  const stop = () => {
    if (stopping) {
      console.log("npm start: stopping at once");
      process.exit(1);
    }
    stopping = true;
    clearInterval(gasTimer);
    console.log("\nnpm start: stopping… (the API and the indexers, then the chains; Ctrl-C again to stop at once)");
    // The API and the indexers first, while the chains still answer (no `fetch failed` on the way out), then the chains.
    const bound = setTimeout(() => {
      console.log("npm start: the API did not stop within 15 s; stopping the chains anyway");
      chain.stop();
      zeroG.stop();
      process.exit(1);
    }, 15_000);
    void server.stop().finally(async () => {
      clearTimeout(bound);
      chain.stop();
      zeroG.stop();
      // "stopped" means the chains are gone too and their ports free (a node takes a moment to close; 5 s at most).
      await Promise.race([Promise.all([chain.exited, zeroG.exited]), new Promise((resolve) => setTimeout(resolve, 5_000))]);
      console.log("npm start: stopped");
      process.exit(0);
    });
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  // Killed with SIGKILL (npm, or the `hardhat run` that started this script): stop all the same. The chains also watch
  // this process and exit once it is gone (scripts/lib/local-chain.ts).
  whenStartersDie(() => {
    // A Ctrl-C also ends `hardhat run` at once: then the stop under way goes on.
    if (stopping) return;
    console.log("npm start: the process that started it is gone");
    stop();
  });

  const exports = `export MARKET_API_URL=${server.url} MARKET_RPC_ARC=${chain.url} MARKET_ESCROW_ARC=${deployment.proxy} MARKET_RPC_0G=${zeroG.url} MARKET_ESCROW_0G=${zeroGDeployment.proxy}`;
  const mcpConfig = mcpClientConfig(
    {
      MARKET_API_URL: server.url,
      MARKET_API_KEY: posterKey.key,
      MARKET_PRIVATE_KEY: keys[3],
      MARKET_RPC_ARC: chain.url,
      MARKET_ESCROW_ARC: deployment.proxy,
      MARKET_RPC_0G: zeroG.url,
      MARKET_ESCROW_0G: zeroGDeployment.proxy,
    },
    { includeKeys: true },
  );

  const webLine = webBuilt()
    ? `Web app       ${server.url}/   (browse without signing in; sign in with a browser wallet on the arc chain below)`
    : "Web app       not built: run npm run build (it writes web/dist), then npm start again";
  console.log(`
${webLine}
API           ${server.url}   (OpenAPI: ${server.url}/openapi.json)
Local chain   ${chain.url}  (chainId ${deployment.chainId})
Escrow        ${deployment.proxy}  (implementation ${deployment.implementation}, v${deployment.version})
Mock USDC     ${deployment.token}
Admin         ${deployment.admin}
Verifier      ${deployment.verifier}
Treasury      ${deployment.treasury}
Fee           ${deployment.feeBps} bps
Deployment    ${path.join(DEPLOYMENTS, `${deployment.network}.json`)}

0g chain      ${zeroG.url}  (chainId ${zeroGDeployment.chainId}; tasks are posted on it with POSTABLE_CHAINS=arc,0g)
Escrow        ${zeroGDeployment.proxy}  (v${zeroGDeployment.version}, writes reputation)
Mock USDC     ${zeroGDeployment.token}
Identity      ${zeroGDeployment.identity!.proxy}  (ERC-8004 identity NFT; minter ${zeroGDeployment.identity!.minters.join(", ")})
Reputation    ${zeroGDeployment.reputation!.proxy}  (written by the escrow at settlement)
Deployment    ${path.join(ZERO_G_DEPLOYMENTS, "0g.json")}

For the SDK and the market CLI (and \`npx hardhat --network localhost escrow:<operation>\`), in every terminal:
  ${exports}
  export MARKET_CHAIN_PORT=${CHAIN_PORT} DEPLOYMENTS_DIR=${DEPLOYMENTS}

Demo poster   ${poster.address}
  export MARKET_API_KEY=${posterKey.key}
  export MARKET_PRIVATE_KEY=${keys[3]}
Demo agent    ${agent.address}  (registered on arc and 0g with every capability)
  export MARKET_API_KEY=${agentKey.key}
  export MARKET_PRIVATE_KEY=${keys[4]}

${hostedLine}
Gas           every hosted agent deployed on this stack gets 1 ETH on arc within seconds (elsewhere: docs/hosted-agents.md, "Gas")

Other demo accounts, ${DEMO_USDC / 10n ** 6n} USDC each (well-known Hardhat test keys: never use them elsewhere):
${demo
  .slice(2)
  .map((s, i) => `  ${s.address}  ${keys[i + 5] ?? ""}`)
  .join("\n")}

Next steps (README, "Try it"):
  1. As the demo poster (its two exports above, after the first block), post a task and see it:
       printf 'instructions,reward,privacy,capabilities\\n"Summarise the history of the printing press",2.5,public,summarization\\n' > tasks.csv
       npx market post-tasks --file tasks.csv && npx market tasks
  2. In another terminal, as the demo agent, work it and get paid: npm run demo:worker
  3. Back as the poster: npx market status <taskHash>, npx market review <taskHash>
  An MCP client (Claude Desktop...) runs market mcp as the demo poster, from any folder, with this config:
${JSON.stringify(mcpConfig, null, 2)
  .split("\n")
  .map((line) => `    ${line}`)
  .join("\n")}
  (\`npx market mcp --print-config\` prints it for the keys in your environment.)

Press Ctrl-C to stop.`);
  await new Promise(() => {});
}

/** Where the local 0g deployment record is written (reset with the rest of the data folder). */
const ZERO_G_DEPLOYMENTS = DEPLOYMENTS;

/**
 * Puts the escrow (4.0.0), the identity NFT and the reputation registry on the local `0g` chain with the registries
 * deploy command, as on the real network (`hardhat run deploy/deploy-registries.ts --network 0g`), and funds the demo
 * accounts with its mock USDC.
 */
async function deployZeroG(zeroG: LocalChain, demo: string[]): Promise<EscrowDeployment> {
  execFileSync(process.execPath, [require.resolve("hardhat/internal/cli/cli"), "run", "--network", "0g", "deploy/deploy-registries.ts"], {
    cwd: path.resolve(__dirname, ".."),
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      HARDHAT_NETWORK: "",
      CHAIN_0G_RPC_URL: zeroG.url,
      CHAIN_0G_CHAIN_ID: String(LOCAL_0G_CHAIN_ID),
      DEPLOYER_PRIVATE_KEY: "",
      DEPLOYMENTS_DIR: ZERO_G_DEPLOYMENTS,
    },
  });
  const deployment = readDeployment("0g", ZERO_G_DEPLOYMENTS);
  if (!deployment?.identity || !deployment.reputation) throw new Error("the 0g registries deployment wrote no record");
  console.log(`  0g: escrow ${deployment.proxy}, identity ${deployment.identity.proxy}, reputation ${deployment.reputation.proxy}`);
  const provider = new JsonRpcProvider(zeroG.url, undefined, { staticNetwork: true, cacheTimeout: -1 });
  try {
    const usdc = MockUSDC__factory.connect(deployment.token, new Wallet(zeroG.accounts[0]!, provider));
    for (const account of demo) await (await usdc.mint(account, DEMO_USDC)).wait();
  } finally {
    provider.destroy();
  }
  return deployment;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

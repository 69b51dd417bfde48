/**
 * `npm run server`: the API and the indexers alone, against the chains configured by the environment
 * (see server/config.ts and docs/server.md).
 */
import { loadConfig, startServer } from "./index";

async function main() {
  const config = loadConfig();
  if (config.chains.length === 0) throw new Error("no chain configured: set CHAIN_ARC_RPC_URL (see docs/server.md)");
  const server = await startServer(config);
  console.log(`market API on ${server.url} (chains: ${config.chains.map((c) => c.name).join(", ")})`);
  const stop = () => {
    server.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

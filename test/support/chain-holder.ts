/**
 * A process that starts a local chain the way `npm start` does (scripts/lib/local-chain.ts) and holds it: with `watch`,
 * it also stops when its own starters die (as start.ts does). Prints `ready <pid of the node>` once the chain answers.
 * Run as `node -r ts-node/register/transpile-only chain-holder.ts <port> [watch]` by test/local-stack/die-with-parent.test.ts.
 */
import { startLocalChain, whenStartersDie } from "../../scripts/lib/local-chain";

async function main() {
  const [port, watch] = process.argv.slice(2);
  const chain = await startLocalChain({ port: Number(port), quiet: true });
  if (watch === "watch") {
    whenStartersDie(() => {
      chain.stop();
      process.exit(0);
    });
  }
  console.log(`ready ${chain.process.pid}`);
  setInterval(() => {}, 60_000);
}

// Only as a program: Hardhat loads every file under test/ when it runs the suite.
if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}

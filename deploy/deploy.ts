/**
 * Deploys the escrow (and a mock USDC on a local chain) and writes deployments/<network>.json.
 *   npx hardhat run deploy/deploy.ts --network <network>
 * Roles off local chains come from ESCROW_ADMIN, ESCROW_VERIFIER, ESCROW_TREASURY and ESCROW_TOKEN (ESCROW_FEE_BPS
 * defaults to 1000). Re-running where a live deployment is recorded sends nothing. ESCROW_CONTRACT deploys another
 * contract than the current `TaskEscrow` (the fork test deploys `TaskEscrowV1` to upgrade it).
 */
import hre from "hardhat";
import { deployEscrow } from "./escrow";

async function main() {
  const env = process.env;
  const { deployment, created } = await deployEscrow(hre, {
    admin: env.ESCROW_ADMIN,
    verifier: env.ESCROW_VERIFIER,
    treasury: env.ESCROW_TREASURY,
    token: env.ESCROW_TOKEN,
    feeBps: env.ESCROW_FEE_BPS ? Number(env.ESCROW_FEE_BPS) : undefined,
    contract: env.ESCROW_CONTRACT || undefined,
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify({ created, ...deployment }, null, 2));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

/**
 * Validates and upgrades the recorded escrow proxy to the current source, signed by the admin.
 *   npx hardhat run deploy/upgrade.ts --network <network>
 * UPGRADE_CONTRACT names another contract to upgrade to; UPGRADE_REDEPLOY=always forces a fresh implementation.
 * The admin key is ADMIN_PRIVATE_KEY, or the network's account that holds the admin address.
 */
import hre from "hardhat";
import { upgradeEscrow } from "./escrow";

async function main() {
  const redeploy = process.env.UPGRADE_REDEPLOY;
  const { deployment } = await upgradeEscrow(hre, {
    contract: process.env.UPGRADE_CONTRACT,
    redeployImplementation: redeploy === "always" ? "always" : "onchange",
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify(deployment, null, 2));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

/**
 * Puts the identity NFT and the reputation registry beside the escrow and wires them (upgrading the escrow to the
 * current source when it predates 2.0.0, deploying one when none is recorded), then writes deployments/<network>.json.
 *   npx hardhat run deploy/deploy-registries.ts --network 0g
 * REGISTRY_ADMIN holds both registries' admin role (default: the escrow's admin); IDENTITY_MINTER gets the minter role
 * (default on local chains: the marketplace verifier). An escrow deployed here takes its roles from ESCROW_* as in
 * deploy/deploy.ts. Keys: DEPLOYER_PRIVATE_KEY deploys; ADMIN_PRIVATE_KEY (or the network's account) signs as the
 * escrow admin. Re-running sends nothing once everything is in place.
 */
import hre from "hardhat";
import { deployRegistries } from "./registries";

async function main() {
  const env = process.env;
  const { deployment, actions } = await deployRegistries(hre, {
    admin: env.REGISTRY_ADMIN || undefined,
    minter: env.IDENTITY_MINTER || undefined,
    escrow: {
      admin: env.ESCROW_ADMIN,
      verifier: env.ESCROW_VERIFIER,
      treasury: env.ESCROW_TREASURY,
      token: env.ESCROW_TOKEN,
      feeBps: env.ESCROW_FEE_BPS ? Number(env.ESCROW_FEE_BPS) : undefined,
    },
    log: (line) => console.log(line),
  });
  if (actions.length === 0) console.log(`escrow, identity and reputation already in place on ${hre.network.name}; nothing sent`);
  console.log(JSON.stringify(deployment, null, 2));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

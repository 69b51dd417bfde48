/**
 * Since escrow 4.0.0 a payout keeps its fee in the escrow until the treasury sweeps it (docs/escrow.md, "Fees"). Tests
 * that read the treasury's balance after payouts sweep first, so the balances read as when each payout sent its fee.
 */
import type { Signer } from "ethers";
import type { TaskEscrow } from "../../typechain-types";

export async function sweepFeesToTreasury(s: { escrow: TaskEscrow; treasury: Signer; token: string }): Promise<bigint> {
  const fees = await s.escrow.accruedFees(s.token);
  if (fees > 0n) await (await s.escrow.connect(s.treasury).sweepFees(s.token)).wait();
  return fees;
}

import { MarketError } from "@market/core/errors";

/** Rentals ignore the agent's minimum; every other task, pinned ones included, respects it. */
export function minRewardRefusal(minReward: string | null, amount: bigint, serviceId: number | null): MarketError | undefined {
  if (serviceId !== null || minReward === null || BigInt(minReward) <= amount) return undefined;
  return new MarketError("BELOW_MIN_REWARD", `The reward ${amount} is below the agent's minimum ${minReward}.`);
}

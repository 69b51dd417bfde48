import type { ListingWithAmount } from "../db/schema";
import { minRewardRefusal, type AgentProfile } from "../agents";
import { listedFields } from "../tasks/listing-codec";
import { MarketError } from "@market/core/errors";
import { agentChains } from "@market/core/chains";
import { EscrowStatus, isOpen } from "@market/core/escrow";

/** The agent side of an eligibility check. */
export interface Candidate {
  profile: AgentProfile;
  /** The agent's account (null when registered without one). */
  accountId: number | null;
}

/** Who may not take a task beyond its poster's account: a delegated sub-task's parent poster and its accounts. */
export interface Exclusion {
  poster: string;
  accounts: ReadonlySet<number>;
}

/** The task side: its listing, escrow status and deadline, and who may open its brief. */
export interface Opening {
  listing: ListingWithAmount;
  status: number;
  /** Seconds. */
  deadline: number;
  posterAccountId: number | null;
  /** A delegated sub-task's parent poster and its accounts, who may not take it (issue 23 item 1); null otherwise. */
  excluded?: Exclusion | null;
  /** True when the brief key is wrapped to the candidate (or the task is public). */
  wrappedToCandidate: boolean;
  /** True when a custody copy can be re-wrapped to any agent. */
  rewrappable: boolean;
}

/**
 * Why this agent may not take this task, or undefined when it may (exclusive offers and the accept lock aside).
 * Every accept condition of the spec, in one place for accepting, bidding and ranking offers.
 */
export function refusal(task: Opening, agent: Candidate, nowSeconds: number): MarketError | undefined {
  const { listing } = task;
  const address = agent.profile.address;
  if (!isOpen(task, nowSeconds)) {
    return new MarketError("NOT_OPEN", task.status === EscrowStatus.Funded ? "The task's deadline has passed." : undefined);
  }
  if (listing.target_executor !== null && listing.target_executor !== address) return new MarketError("NOT_TARGET_EXECUTOR");
  if (listing.poster === address || (agent.accountId !== null && agent.accountId === task.posterAccountId)) return new MarketError("OWN_TASK");
  if (task.excluded && (task.excluded.poster === address || (agent.accountId !== null && task.excluded.accounts.has(agent.accountId))))
    return new MarketError(
      "OWN_TASK",
      "A sub-task may not go to the poster of the task it was delegated from, nor to an agent of that poster's account.",
    );
  if (listing.verifier_address === address) return new MarketError("VERIFIER_CANNOT_EXECUTE");
  if (!agent.profile.publicKey) return new MarketError("NO_PUBLIC_KEY");
  if (!agentChains(agent.profile.supportedChains).includes(listing.chain as never)) {
    return new MarketError(
      "CHAIN_UNSUPPORTED",
      `The task is on ${listing.chain}; the agent works on ${agentChains(agent.profile.supportedChains).join(", ")}.`,
    );
  }
  const required = listedFields(listing).requiredCapabilities;
  const missing = required.filter((tag) => !agent.profile.capabilities.includes(tag));
  if (missing.length > 0) return new MarketError("CAPABILITIES_MISSING", `Missing capabilities: ${missing.join(", ")}.`);
  const belowMinimum = minRewardRefusal(agent.profile.minReward, BigInt(listing.amount), listing.service_id);
  if (belowMinimum) return belowMinimum;
  if (listing.privacy === "private" && !task.wrappedToCandidate && !task.rewrappable) return new MarketError("NEEDS_WRAP");
  return undefined;
}

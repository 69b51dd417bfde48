/**
 * Reputation rules. Three numbers per wallet, kept apart:
 * - registry reputation, 0 to 100: starts at 50, +1 per settled task credited, -10 per failed verification round and
 *   per dispute ruled against the agent; beyond the spec (docs/security.md, task hoarding): -10 per assignment that
 *   ends never delivered and -2 per assignment handed back;
 * - decayed score: +10 raw per settled task; the shown score halves for every full 7 days without a settled task;
 * - on-chain reputation: the numbers the reputation contract (contracts/reputation/TaskReputation.sol) holds for the
 *   wallet, written by the escrows that have it (on `0g`) at settlement and read from the projection of its events
 *   (server/reputation/onchain-projection.ts); the API shows them with the composite `onChainScore` below.
 * Whose record a task's outcomes touch is the projection's decision (server/reputation/projection.ts
 * `creditedWorker`): only tasks the marketplace assigned, never one its poster assigned directly. Of those, a settled
 * task credits reputation, score and badges only as `creditRefusal` allows (reputation farming, docs/security.md);
 * one that does not still pays the agent (earnings). Penalties count for every task the marketplace assigned.
 */
import {
  ASSIGNMENT_CAP_BASE,
  ASSIGNMENT_CAP_COMPLETIONS_PER_SLOT,
  ASSIGNMENT_CAP_MAX,
  BADGE_FAILURE_PERCENT_BELOW,
  BADGE_MIN_COMPLETIONS,
  DAY_SECONDS,
  DECAYED_SCORE_PER_SETTLED_TASK,
  DECAY_HALF_LIFE_SECONDS,
  REPUTATION_CREDITS_PER_PAIR,
  REPUTATION_GAIN_PER_SETTLED_TASK,
  REPUTATION_MIN_CREDITED_REWARD_RAW,
  REPUTATION_PAIR_PERIOD_SECONDS,
  REPUTATION_MAX,
  REPUTATION_MIN,
  REPUTATION_PENALTY_NEVER_DELIVERED,
  REPUTATION_PENALTY_PER_FAILURE,
  REPUTATION_PENALTY_PER_RELEASE,
  REPUTATION_START,
} from "./limits";

export interface ReputationState {
  reputation: number;
  tasksCompleted: number;
  failedRounds: number;
  disputes: number;
  disputesLost: number;
  /** Raw units earned, as a decimal string. */
  earnings: string;
  rawScore: number;
  /** Seconds of the latest settled task. */
  lastSettledAt: number | null;
}

/** What happened to a worker, as reputation counts it. */
export type ReputationEvent =
  | { kind: "settled"; payout: bigint; at: number }
  /** A settled task that credits nothing (`creditRefusal`): only the earnings move. */
  | { kind: "paid"; payout: bigint }
  | { kind: "failedRound" }
  | { kind: "disputeRaised" }
  | { kind: "disputeLost" }
  | { kind: "neverDelivered" }
  | { kind: "released" };

export const FRESH_REPUTATION: Readonly<ReputationState> = Object.freeze({
  reputation: REPUTATION_START,
  tasksCompleted: 0,
  failedRounds: 0,
  disputes: 0,
  disputesLost: 0,
  earnings: "0",
  rawScore: 0,
  lastSettledAt: null,
});

const clamp = (n: number) => Math.min(REPUTATION_MAX, Math.max(REPUTATION_MIN, n));

export function applyReputation(state: ReputationState, event: ReputationEvent): ReputationState {
  switch (event.kind) {
    case "settled":
      return {
        ...state,
        reputation: clamp(state.reputation + REPUTATION_GAIN_PER_SETTLED_TASK),
        tasksCompleted: state.tasksCompleted + 1,
        earnings: (BigInt(state.earnings) + event.payout).toString(),
        rawScore: state.rawScore + DECAYED_SCORE_PER_SETTLED_TASK,
        lastSettledAt: Math.max(state.lastSettledAt ?? 0, event.at),
      };
    case "paid":
      return { ...state, earnings: (BigInt(state.earnings) + event.payout).toString() };
    case "failedRound":
      return { ...state, reputation: clamp(state.reputation - REPUTATION_PENALTY_PER_FAILURE), failedRounds: state.failedRounds + 1 };
    case "disputeRaised":
      return { ...state, disputes: state.disputes + 1 };
    case "disputeLost":
      return { ...state, reputation: clamp(state.reputation - REPUTATION_PENALTY_PER_FAILURE), disputesLost: state.disputesLost + 1 };
    case "neverDelivered":
      return { ...state, reputation: clamp(state.reputation - REPUTATION_PENALTY_NEVER_DELIVERED) };
    case "released":
      return { ...state, reputation: clamp(state.reputation - REPUTATION_PENALTY_PER_RELEASE) };
  }
}

/** Which settled tasks credit reputation, score and badges (reputation farming, docs/security.md). */
export interface CreditRule {
  /** Least reward (raw units) of a task that credits. */
  minRewardRaw: bigint;
  /** Credited tasks one poster may give one agent within `periodSeconds` (block time, rolling). */
  perPair: number;
  periodSeconds: number;
}

export const DEFAULT_CREDIT_RULE: Readonly<CreditRule> = Object.freeze({
  minRewardRaw: REPUTATION_MIN_CREDITED_REWARD_RAW,
  perPair: REPUTATION_CREDITS_PER_PAIR,
  periodSeconds: REPUTATION_PAIR_PERIOD_SECONDS,
});

export type CreditRefusal = "below_min_reward" | "same_account" | "pair_limit";

/**
 * Why a settled task credits nothing, or undefined when it credits its worker (+1 reputation, a completion, +10 raw
 * score, a completion per capability tag): its reward is below the minimum, its poster's account holds the agent's
 * wallet (or runs it), or the pair already credited `perPair` tasks within the period before it.
 */
export function creditRefusal(
  task: { amount: bigint },
  facts: { sameAccount: boolean; pairCreditsInPeriod: number },
  rule: CreditRule = DEFAULT_CREDIT_RULE,
): CreditRefusal | undefined {
  if (task.amount < rule.minRewardRaw) return "below_min_reward";
  if (facts.sameAccount) return "same_account";
  if (facts.pairCreditsInPeriod >= rule.perPair) return "pair_limit";
  return undefined;
}

export interface AssignmentCapRule {
  base: number;
  completionsPerSlot: number;
  max: number;
}

export const DEFAULT_ASSIGNMENT_CAP: Readonly<AssignmentCapRule> = Object.freeze({
  base: ASSIGNMENT_CAP_BASE,
  completionsPerSlot: ASSIGNMENT_CAP_COMPLETIONS_PER_SLOT,
  max: ASSIGNMENT_CAP_MAX,
});

/**
 * How many undelivered assignments an agent may hold at once: a few for a new agent, one more per
 * `completionsPerSlot` settled tasks credited, at most `max`. Against hoarding (docs/security.md).
 */
export function undeliveredAssignmentCap(tasksCompleted: number, rule: AssignmentCapRule = DEFAULT_ASSIGNMENT_CAP): number {
  const earned = rule.completionsPerSlot > 0 ? Math.floor(tasksCompleted / rule.completionsPerSlot) : 0;
  return Math.max(rule.base, Math.min(rule.max, rule.base + earned));
}

export interface DecayedScore {
  rawScore: number;
  decayedScore: number;
  /** 0.5 to the power of full weeks since the latest settled task. */
  decayFactor: number;
  /** Whole days since the latest settled task; null when there was none. */
  daysSinceLastTask: number | null;
}

export function decayedScore(rawScore: number, lastSettledAt: number | null, nowSeconds: number): DecayedScore {
  if (lastSettledAt === null) return { rawScore, decayedScore: rawScore, decayFactor: 1, daysSinceLastTask: null };
  const idle = Math.max(0, nowSeconds - lastSettledAt);
  const decayFactor = 0.5 ** Math.floor(idle / DECAY_HALF_LIFE_SECONDS);
  return { rawScore, decayedScore: rawScore * decayFactor, decayFactor, daysSinceLastTask: Math.floor(idle / DAY_SECONDS) };
}

export interface TagStats {
  completions: number;
  failures: number;
}

/** A badge is earned after 5 settled completions with failures under 20% of all outcomes. */
export function earnsBadge({ completions, failures }: TagStats): boolean {
  if (completions < BADGE_MIN_COMPLETIONS) return false;
  return failures * 100 < BADGE_FAILURE_PERCENT_BELOW * (completions + failures);
}

/**
 * The installed public skill a settled task credits (spec "Reputation": one completion or failure "for the installed
 * public skill that best matches"): the one sharing the most tags with the task's required capabilities, the earliest
 * installed on a tie; none when no skill shares a tag (a task requiring no capability credits no skill).
 */
export function bestMatchingSkill<S extends { capabilities: readonly string[] }>(skills: readonly S[], taskTags: readonly string[]): S | undefined {
  const wanted = new Set(taskTags);
  let best: { skill: S; shared: number } | undefined;
  for (const skill of skills) {
    const shared = new Set(skill.capabilities.filter((tag) => wanted.has(tag))).size;
    if (shared > 0 && (!best || shared > best.shared)) best = { skill, shared };
  }
  return best?.skill;
}

/** Weight of one badge for a required capability when ranking agents for a task's offer. */
export const BADGE_RANK_BONUS = 25;

/** Offer ranking: the decayed score, plus a bonus per badge the agent holds among the task's required capabilities. */
export function offerRank(decayed: number, badgesForTask: number): number {
  return decayed + BADGE_RANK_BONUS * badgesForTask;
}

/** The reputation contract's record of one agent wallet (summed over the chains that have one). */
export interface OnChainRecord {
  tasksCompleted: number;
  scoreSum: number;
  scoreCount: number;
  disputes: number;
}

export const NO_ON_CHAIN_RECORD: Readonly<OnChainRecord> = Object.freeze({ tasksCompleted: 0, scoreSum: 0, scoreCount: 0, disputes: 0 });

/** Outcomes (completions plus disputes) after which the composite stops discounting a short history. */
export const ON_CHAIN_FULL_CONFIDENCE_OUTCOMES = 10;
/** What a paid task nobody scored (released unjudged, a dispute won) counts for in the composite: neutral. */
export const ON_CHAIN_UNSCORED_VALUE = 50;

/**
 * The average verification score of the scored tasks, 0 to 100, floored to hundredths as the contract's
 * `summaryOf(agent).averageScore` (times 100) floors it; 0 when no task was scored.
 */
export function onChainAverageScore(record: OnChainRecord): number {
  return record.scoreCount === 0 ? 0 : Math.floor((record.scoreSum * 100) / record.scoreCount) / 100;
}

/**
 * The on-chain composite, an integer 0 to 100; 0 without on-chain history (never a default of 100):
 *   quality     = the sum of scores, plus 50 for each completed task that was paid without a score, over completions;
 *   reliability = completions / (completions + disputes ruled against the agent);
 *   confidence  = min(1, (completions + disputes) / 10);
 *   onChainScore = round(quality x reliability x confidence).
 * One perfect task gives 10; ten perfect tasks give 100; a dispute against every other task halves the score.
 */
export function onChainScore(record: OnChainRecord): number {
  const outcomes = record.tasksCompleted + record.disputes;
  if (outcomes === 0 || record.tasksCompleted === 0) return 0;
  const unscored = Math.max(0, record.tasksCompleted - record.scoreCount);
  const quality = (record.scoreSum + ON_CHAIN_UNSCORED_VALUE * unscored) / record.tasksCompleted;
  const reliability = record.tasksCompleted / outcomes;
  const confidence = Math.min(1, outcomes / ON_CHAIN_FULL_CONFIDENCE_OUTCOMES);
  return Math.max(0, Math.min(100, Math.round(quality * reliability * confidence)));
}

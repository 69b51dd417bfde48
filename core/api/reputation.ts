import { Type, type Static } from "@sinclair/typebox";
import { Address } from "./common";

/** An agent's ERC-8004 identity token: its id on the identity contract of a chain. */
export const AgentIdentityRef = Type.Object({
  chain: Type.String({ description: "The chain of the identity contract (`0g`)." }),
  agentId: Type.String({ pattern: "^[0-9]{1,78}$", description: "The token id (ERC-8004 agentId), a decimal string." }),
  contract: Address,
  owner: Address,
});
export type AgentIdentityRef = Static<typeof AgentIdentityRef>;

/** GET /api/v1/reputation/leaderboard. */
export const LeaderboardQuery = Type.Object(
  { limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,3}$", description: "1 to 100; default 50." })) },
  { additionalProperties: false },
);
export const Leaderboard = Type.Object({
  agents: Type.Array(
    Type.Object({
      address: Address,
      displayName: Type.Union([Type.String(), Type.Null()]),
      decayedScore: Type.Number(),
      rawScore: Type.Integer(),
      reputation: Type.Integer(),
      tasksCompleted: Type.Integer({
        description: "Tasks settled for the agent on every chain this service indexes: the reputation answer's `offChainTasksCompleted`.",
      }),
    }),
  ),
});
export type Leaderboard = Static<typeof Leaderboard>;

/** GET /api/v1/reputation/{address}. */
export const Reputation = Type.Object({
  address: Address,
  reputation: Type.Integer({ description: "Registry reputation, 0 to 100." }),
  tasksCompleted: Type.Integer({
    description:
      "On chain: tasks completed as the reputation contract records them, written only by the `0g` escrow at settlement (the `arc` escrow has no reputation contract); 0 without a record. Every settled task, on any chain, is `offChainTasksCompleted`.",
  }),
  avgScore: Type.Number({
    description: "The contract's average verification score of the scored tasks, 0 to 100 (hundredths, floored); 0 when none was scored.",
  }),
  disputes: Type.Integer({ description: "Disputes ruled against the agent, as the reputation contract records them." }),
  onChainScore: Type.Integer({
    description:
      "0-100 composite of the contract's numbers, 0 without on-chain history: round(quality x reliability x confidence), quality = " +
      "(sum of scores + 50 per unscored paid task) / tasksCompleted, reliability = tasksCompleted / (tasksCompleted + disputes), " +
      "confidence = min(1, (tasksCompleted + disputes) / 10).",
  }),
  rawScore: Type.Integer(),
  decayedScore: Type.Number(),
  decayFactor: Type.Number(),
  daysSinceLastTask: Type.Union([Type.Integer(), Type.Null()]),
  offChainTasksCompleted: Type.Integer({
    description:
      "Tasks settled for the agent (paid) on every chain this service indexes, `arc` included, as its indexer counts them: what `reputation` and the decayed score move with. It differs from the on-chain `tasksCompleted` whenever tasks were settled outside `0g`.",
  }),
  offChainDisputes: Type.Integer({ description: "Disputes ruled against the agent on every chain this service indexes." }),
  note: Type.Optional(
    Type.String({
      description: "Present when the on-chain and off-chain counts differ: which numbers count what, in words.",
    }),
  ),
});
export type Reputation = Static<typeof Reputation>;

/** A badge the service's team granted (admin routes, issue 25 item 7): for a capability tag or a public skill's slug. */
export const VerifiedBadge = Type.Object({
  address: Address,
  kind: Type.Union([Type.Literal("tag"), Type.Literal("skill")]),
  name: Type.String({ description: "The capability tag, or the skill's slug." }),
  grantedAt: Type.Integer({ description: "Epoch ms." }),
});
export type VerifiedBadge = Static<typeof VerifiedBadge>;

/** GET /api/v1/reputation/{address}/badges. */
export const Badges = Type.Object({
  stats: Type.Array(Type.Object({ tag: Type.String(), completions: Type.Integer(), failures: Type.Integer() }), {
    description: "Per capability tag: settled completions and failures.",
  }),
  skillStats: Type.Array(Type.Object({ skill: Type.String(), name: Type.String(), completions: Type.Integer(), failures: Type.Integer() }), {
    description: "Per installed public skill (each settled task credits the one that best matches its tags); private skills never appear.",
  }),
  badges: Type.Array(Type.Object({ tag: Type.String(), kind: Type.Literal("earned") }), {
    description: "Earned per tag (5 completions, failures under 20%).",
  }),
  skillBadges: Type.Array(Type.Object({ skill: Type.String(), kind: Type.Literal("earned") }), {
    description: "Earned per public skill, by the same rule.",
  }),
  verified: Type.Array(
    Type.Object({ kind: Type.Union([Type.Literal("tag"), Type.Literal("skill")]), name: Type.String(), grantedAt: Type.Integer() }),
    { description: "Granted by the service's team, apart from the earned ones (a skill's only while it is public)." },
  ),
});
export type Badges = Static<typeof Badges>;

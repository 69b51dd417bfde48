import { Type, type Static } from "@sinclair/typebox";
import { Address } from "./common";

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
      tasksCompleted: Type.Integer(),
    }),
  ),
});
export type Leaderboard = Static<typeof Leaderboard>;

/** GET /api/v1/reputation/{address}. */
export const Reputation = Type.Object({
  address: Address,
  reputation: Type.Integer({ description: "Registry reputation, 0 to 100." }),
  tasksCompleted: Type.Integer({ description: "On-chain (0g) tasks completed; 0 when 0g is not configured." }),
  avgScore: Type.Number({ description: "On-chain (0g) average verification score of paid tasks." }),
  disputes: Type.Integer({ description: "On-chain (0g) disputes." }),
  onChainScore: Type.Integer({ description: "0-100 composite of the on-chain numbers: avgScore scaled by the share of tasks not disputed." }),
  rawScore: Type.Integer(),
  decayedScore: Type.Number(),
  decayFactor: Type.Number(),
  daysSinceLastTask: Type.Union([Type.Integer(), Type.Null()]),
  offChainTasksCompleted: Type.Integer(),
  offChainDisputes: Type.Integer(),
});
export type Reputation = Static<typeof Reputation>;

/** GET /api/v1/reputation/{address}/badges. */
export const Badges = Type.Object({
  stats: Type.Array(Type.Object({ tag: Type.String(), completions: Type.Integer(), failures: Type.Integer() })),
  badges: Type.Array(Type.Object({ tag: Type.String(), kind: Type.Literal("earned") })),
});
export type Badges = Static<typeof Badges>;

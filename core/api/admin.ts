import { Type, type Static } from "@sinclair/typebox";
import { Address, ChainNameString, RawAmount, TaskHash } from "./common";
import { VerifiedBadge } from "./reputation";

/** GET /api/v1/admin/disputes: the tasks awaiting the escrow admin's ruling (`resolveDispute`), most urgent first. */
export const AwaitingRuling = Type.Object({
  chain: ChainNameString,
  taskHash: TaskHash,
  status: Type.Union([Type.Literal("disputed"), Type.Literal("escalated")], {
    description: "`disputed`: the poster or the worker raised a dispute; `escalated`: delivered work nobody judged, escalated by the poster.",
  }),
  poster: Address,
  worker: Type.Union([Address, Type.Null()]),
  amount: RawAmount,
  raisedBy: Type.Union([Address, Type.Null()], { description: "Who raised the dispute; null for escalated work." }),
  since: Type.Integer({ description: "Block time (seconds) of the dispute or escalation." }),
  ruleBy: Type.Integer({
    description:
      "Block time (seconds) the ruling window ends: then the poster may claim a refund (disputed) or the worker may collect (escalated) without a ruling.",
  }),
  secondsLeft: Type.Integer({ description: "Until `ruleBy` on the service's chain clock; 0 once it has passed." }),
  overdue: Type.Boolean({ description: "The window has passed with no ruling." }),
});
export type AwaitingRuling = Static<typeof AwaitingRuling>;

export const AdminDisputes = Type.Object({
  disputes: Type.Array(AwaitingRuling),
  total: Type.Integer(),
});
export type AdminDisputes = Static<typeof AdminDisputes>;

/** POST /api/v1/admin/badges (issue 25 item 7): grant a verified badge to an agent, for a capability tag or a public skill. */
export const GrantBadgeBody = Type.Object(
  {
    address: Type.String({ maxLength: 100, description: "The agent's wallet (a registered or hosted agent)." }),
    kind: Type.Union([Type.Literal("tag"), Type.Literal("skill")]),
    name: Type.String({ minLength: 1, maxLength: 64, description: "The capability tag, or the public skill's slug." }),
  },
  { additionalProperties: false },
);
export type GrantBadgeBody = Static<typeof GrantBadgeBody>;
/** DELETE /api/v1/admin/badges/{address}/{kind}/{name}. */
export const BadgeParams = Type.Object({
  address: Type.String({ maxLength: 100 }),
  kind: Type.Union([Type.Literal("tag"), Type.Literal("skill")]),
  name: Type.String({ minLength: 1, maxLength: 64 }),
});
export type BadgeParams = Static<typeof BadgeParams>;
export const GrantedBadge = Type.Object({ badge: VerifiedBadge, granted: Type.Boolean({ description: "False when it was granted already." }) });
export const RevokedBadge = Type.Object({ revoked: Type.Literal(true) });

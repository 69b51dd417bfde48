import { Type, type Static } from "@sinclair/typebox";
import { Address, ChainNameString, RawAmount, TaskHash } from "./common";

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

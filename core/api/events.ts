import { Type, type Static } from "@sinclair/typebox";
import { ChainNameString, TaskHashText } from "./common";

/**
 * The event log (issue 27, docs/events.md): what happened to tasks, in the order each chain's indexer committed it.
 * `cursor` numbers a chain's events (the replay position); `id` names an event for good (delivery de-duplication).
 */
export const EVENT_TYPES = [
  "task.funded",
  "task.listed",
  "task.assigned",
  "task.released",
  "task.delivered",
  "task.verified",
  "task.disputed",
  "task.ruled",
  "task.escalated",
  "task.paid",
  "task.cancelled",
  "task.expired",
  "task.refunded",
  "task.verdict",
  "rental.settled",
  "agent.started",
  "agent.stopped",
  "event.reverted",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const EventTypeString = Type.Unsafe<EventType>(Type.String({ enum: [...EVENT_TYPES] }));

export const MarketEvent = Type.Object(
  {
    id: Type.String({ description: "Stable id: the same event always carries it (de-duplicate deliveries by it)." }),
    cursor: Type.String({ description: "Position on its chain's log, decimal; resume with `after=<cursor>`." }),
    chain: ChainNameString,
    type: EventTypeString,
    taskHash: Type.Union([TaskHashText, Type.Null()]),
    public: Type.Boolean({ description: "Every key may see it; otherwise only the task's parties." }),
    data: Type.Record(Type.String(), Type.Unknown(), { description: "The event's fields (docs/events.md)." }),
    blockNumber: Type.Union([Type.Integer(), Type.Null()]),
    txHash: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.Integer({ description: "When the log recorded it (epoch ms)." }),
  },
  { additionalProperties: false },
);
export type MarketEvent = Static<typeof MarketEvent>;

export const EventsQuery = Type.Object(
  {
    chain: Type.Optional(ChainNameString),
    after: Type.Optional(
      Type.String({
        pattern: "^([0-9]{1,15}|now)$",
        description: "Cursor of the last event seen; 0 or absent: from the start; `now`: from the log's head (only what comes next).",
      }),
    ),
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$", description: "Events per page, 1 to 500 (default 100)." })),
    types: Type.Optional(Type.String({ maxLength: 400, description: "Comma-separated event types to keep (default: all)." })),
    taskHash: Type.Optional(Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" })),
  },
  { additionalProperties: false },
);
export type EventsQuery = Static<typeof EventsQuery>;

export const EventPage = Type.Object(
  {
    chain: ChainNameString,
    events: Type.Array(MarketEvent),
    next: Type.String({ description: "Cursor to ask `after` next: the last event's, or `after` when none." }),
    more: Type.Boolean({ description: "Whether more events already follow `next`." }),
  },
  { additionalProperties: false },
);
export type EventPage = Static<typeof EventPage>;

/** The A2A task state an event leaves its task in (A2A v1.0 `TaskState`), for streams and push notifications. */
export function a2aStateOfEvent(type: EventType, revertedType?: string): string {
  switch (type) {
    case "task.funded":
    case "task.listed":
    case "task.released":
      return "TASK_STATE_SUBMITTED";
    case "task.paid":
    case "rental.settled":
      return "TASK_STATE_COMPLETED";
    case "task.cancelled":
      return "TASK_STATE_CANCELED";
    case "task.expired":
    case "task.refunded":
      return "TASK_STATE_FAILED";
    case "event.reverted":
      return revertedType === "task.assigned" || revertedType === "task.listed" ? "TASK_STATE_SUBMITTED" : "TASK_STATE_WORKING";
    default:
      return "TASK_STATE_WORKING";
  }
}

/** A2A states after which a task changes no more. */
export const A2A_FINAL_STATES: readonly string[] = ["TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED"];

/** An event as an A2A v1.0 StreamResponse status update (the market event in `metadata.market`). */
export function a2aStatusUpdate(event: MarketEvent) {
  const state = a2aStateOfEvent(event.type, typeof event.data.revertedType === "string" ? event.data.revertedType : undefined);
  return {
    statusUpdate: {
      taskId: event.taskHash ?? "",
      contextId: event.taskHash ?? "",
      status: { state, timestamp: new Date(event.createdAt).toISOString() },
      metadata: { market: event },
    },
  };
}

/**
 * The event log (issue 27, docs/events.md): what happened to tasks, appended per chain in the transactions that change
 * what the API shows (the indexer's projections, a first listing), numbered by a cursor, and read back filtered to what
 * a key may see: replayed a page at a time, or streamed over Server-Sent Events.
 */
export { appendEvents, eventId, holdLog, lastCursor, type EventDraft } from "./log";
export { listedDraft, eventTypeOf } from "./derive";
export { createEventLogProjection } from "./projection";
export { createEventFeed, type EventFeed } from "./feed";
export { readEvents, walletsOf, type EventFilter } from "./replay";
export { eventRoutes, EVENTS_PREFIX, type EventRoutesDeps } from "./routes";
export { createTaskWatches, type TaskEventWatch } from "./watch";

/**
 * The chain indexer: follows the escrow of a chain with eth_getLogs (catch-up in adaptive ranges, then polling),
 * keeps the decoded logs (escrow_events) and projects them into read models (escrow_tasks, escrow_state, and any
 * projection another domain adds). The cursor moves in the same transaction as the data it covers; reorgs roll back
 * to the common ancestor. Runs in-process (`createIndexer`) or in a worker thread (`startIndexerWorker`).
 */
export { createIndexer, type Indexer, type IndexerOptions, type IndexerLogger, type IndexerStep, type RangeProgress, type SyncResult } from "./sync";
export type { IndexerProvider, RawLog } from "./node";
export {
  applyIndexerV8Flags,
  indexerV8FlagsApplied,
  INDEXER_V8_FLAGS,
  startIndexerWorker,
  superviseIndexerWorker,
  type IndexerWorker,
  type IndexerWorkerOptions,
  type ProjectionsModule,
  type SupervisedIndexerWorker,
  type SupervisedIndexerWorkerOptions,
} from "./worker";
export { indexerLag, readCursor, CursorMovedError, REORG_HISTORY_BLOCKS, type Cursor, type IndexerLag } from "./cursor";
export { isRegistryProjection, type AnyProjection, type Projection, type RegistryProjection } from "./projection";
export { createTaskProjection, projectedTaskOf, taskRowOf, taskSnapshotOf, type TaskRow, type EscrowStateRow } from "./task-projection";
export { UNKNOWN_EVENT, type ChainEvent, type EscrowEventArgs } from "./events";
export { followNewHeads, newHeadsUrl, type HeadFollower } from "./heads";
export { createBlockRange, isRangeRefusal, type BlockRange, type BlockRangeOptions } from "./log-range";

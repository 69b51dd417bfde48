import type { Selectable, Insertable } from "kysely";
import type { EscrowEventsTable } from "../db/schema";
import type { RawLog } from "./node";
import { compareLogs, decodeEscrowLog, storedEscrowEvent, type EscrowLog } from "../../core/escrow";

/** One escrow log as the indexer keeps it (a row of escrow_events, with its args parsed); decoded by core/escrow. */
export type ChainEvent = EscrowLog;
export { UNKNOWN_EVENT, type EscrowEventArgs } from "../../core/escrow";

/** Blocks, then logs within a block: the order the chain emitted them. */
export const compareEvents = compareLogs;

/** Decodes one escrow log; `blockTime` is the block's timestamp in seconds. */
export function decodeLog(chain: string, log: RawLog, blockTime: number): ChainEvent {
  const position = {
    chain,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash,
    logIndex: log.index,
    txHash: log.transactionHash,
    txIndex: log.transactionIndex,
    blockTime,
  };
  return decodeEscrowLog(position, log.topics, log.data);
}

export function toEventRow(event: ChainEvent): Insertable<EscrowEventsTable> {
  return {
    chain: event.chain,
    block_number: event.blockNumber,
    block_hash: event.blockHash,
    log_index: event.logIndex,
    tx_hash: event.txHash,
    tx_index: event.txIndex,
    event: event.event,
    task_hash: event.taskHash,
    args: JSON.stringify(event.args),
    // The table keeps epoch milliseconds, as every time column of the schema.
    block_time: event.blockTime * 1000,
  };
}

export function fromEventRow(row: Selectable<EscrowEventsTable>): ChainEvent {
  return {
    chain: row.chain,
    blockNumber: Number(row.block_number),
    blockHash: row.block_hash,
    logIndex: row.log_index,
    txHash: row.tx_hash,
    txIndex: row.tx_index,
    taskHash: row.task_hash,
    blockTime: Math.floor(Number(row.block_time) / 1000),
    ...storedEscrowEvent(row.event, JSON.parse(row.args)),
  };
}

import type { Selectable, Insertable } from "kysely";
import type { EscrowEventsTable, RegistryEventsTable } from "../db/schema";
import type { RawLog } from "./node";
import { compareLogs, decodeEscrowLog, storedEscrowEvent, type EscrowLog, type LogPosition } from "@market/core/escrow";
import { decodeRegistryLog, registrySubject, storedRegistryEvent, type RegistryLog, type RegistryName } from "@market/core/registries";

/** One escrow log as the indexer keeps it (a row of escrow_events, with its args parsed); decoded by core/escrow. */
export type ChainEvent = EscrowLog;
export { UNKNOWN_EVENT, type EscrowEventArgs } from "@market/core/escrow";

/** Blocks, then logs within a block: the order the chain emitted them. */
export const compareEvents = compareLogs;

/** Decodes one escrow log; `blockTime` is the block's timestamp in seconds. */
export function decodeLog(chain: string, log: RawLog, blockTime: number): ChainEvent {
  return decodeEscrowLog(positionOf(chain, log, blockTime), log.topics, log.data);
}

/** Decodes one registry log; undefined for a log the service does not keep (roles, upgrades, approvals). */
export function decodeRegistryRawLog(chain: string, registry: RegistryName, log: RawLog, blockTime: number): RegistryLog | undefined {
  return decodeRegistryLog(positionOf(chain, log, blockTime), registry, log.topics, log.data);
}

function positionOf(chain: string, log: RawLog, blockTime: number): LogPosition {
  return {
    chain,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash,
    logIndex: log.index,
    txHash: log.transactionHash,
    txIndex: log.transactionIndex,
    blockTime,
  };
}

export function toRegistryEventRow(event: RegistryLog): Insertable<RegistryEventsTable> {
  return {
    chain: event.chain,
    block_number: event.blockNumber,
    block_hash: event.blockHash,
    log_index: event.logIndex,
    tx_hash: event.txHash,
    tx_index: event.txIndex,
    registry: event.registry,
    event: event.event,
    subject: registrySubject(event),
    args: JSON.stringify(event.args),
    block_time: event.blockTime * 1000,
  };
}

export function fromRegistryEventRow(row: Selectable<RegistryEventsTable>): RegistryLog {
  return {
    chain: row.chain,
    blockNumber: Number(row.block_number),
    blockHash: row.block_hash,
    logIndex: row.log_index,
    txHash: row.tx_hash,
    txIndex: row.tx_index,
    blockTime: Math.floor(Number(row.block_time) / 1000),
    registry: row.registry,
    ...storedRegistryEvent(row.event, JSON.parse(row.args)),
  };
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

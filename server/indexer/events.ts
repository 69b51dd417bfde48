import { AbiCoder, getAddress, type ParamType } from "ethers";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";
import type {
  DeadlineExpiredEvent,
  DisputeRaisedEvent,
  DisputeResolvedEvent,
  EscrowPausedAtEvent,
  EscrowUnpausedEvent,
  EvidenceSubmittedEvent,
  FeeUpdatedEvent,
  TaskCancelledEvent,
  TaskCompletedEvent,
  TaskCreatedEvent,
  TaskRefundedEvent,
  UnjudgedWorkEscalatedEvent,
  VerificationCompletedEvent,
  WorkerAssignedEvent,
  WorkerReleasedEvent,
} from "../../typechain-types/contracts/TaskEscrow";
import type { Selectable, Insertable } from "kysely";
import type { EscrowEventsTable } from "../db/schema";
import type { RawLog } from "./node";

/** Decoded arguments as stored: integers become decimal strings, so the JSON round trip loses nothing. */
export type StoredArgs = Record<string, string | boolean>;
type Stored<T> = { [K in keyof T]: T[K] extends bigint ? string : T[K] };

/** Arguments of the escrow events a projection reads, typed from the TaskEscrow bindings. */
export interface EscrowEventArgs {
  TaskCreated: Stored<TaskCreatedEvent.OutputObject>;
  WorkerAssigned: Stored<WorkerAssignedEvent.OutputObject>;
  WorkerReleased: Stored<WorkerReleasedEvent.OutputObject>;
  EvidenceSubmitted: Stored<EvidenceSubmittedEvent.OutputObject>;
  VerificationCompleted: Stored<VerificationCompletedEvent.OutputObject>;
  DisputeRaised: Stored<DisputeRaisedEvent.OutputObject>;
  DisputeResolved: Stored<DisputeResolvedEvent.OutputObject>;
  UnjudgedWorkEscalated: Stored<UnjudgedWorkEscalatedEvent.OutputObject>;
  TaskCompleted: Stored<TaskCompletedEvent.OutputObject>;
  TaskCancelled: Stored<TaskCancelledEvent.OutputObject>;
  DeadlineExpired: Stored<DeadlineExpiredEvent.OutputObject>;
  TaskRefunded: Stored<TaskRefundedEvent.OutputObject>;
  FeeUpdated: Stored<FeeUpdatedEvent.OutputObject>;
  EscrowPausedAt: Stored<EscrowPausedAtEvent.OutputObject>;
  EscrowUnpaused: Stored<EscrowUnpausedEvent.OutputObject>;
}

/** Name stored for a log the escrow's ABI does not know; its args keep the raw topics and data. */
export const UNKNOWN_EVENT = "Unknown";

/** One escrow log as the indexer keeps it (a row of escrow_events, with its args parsed). */
export interface ChainEvent {
  chain: string;
  blockNumber: number;
  blockHash: string;
  logIndex: number;
  txHash: string;
  txIndex: number;
  event: string;
  taskHash: string | null;
  args: StoredArgs;
  /** Block timestamp, seconds. */
  blockTime: number;
}

/** The event's args typed by its name; the caller has checked `event.event`. */
export function argsOf<N extends keyof EscrowEventArgs>(event: ChainEvent, _name: N): EscrowEventArgs[N] {
  return event.args as unknown as EscrowEventArgs[N];
}

/** Blocks, then logs within a block: the order the chain emitted them. */
export function compareEvents(a: Pick<ChainEvent, "blockNumber" | "logIndex">, b: Pick<ChainEvent, "blockNumber" | "logIndex">): number {
  return a.blockNumber - b.blockNumber || a.logIndex - b.logIndex;
}

/**
 * One escrow event as the decoder needs it, prepared once. ethers' parseLog recomputes every event's topic hash for
 * each log and decodes word by word through generic coders; a catch-up decodes tens of thousands of logs.
 */
interface EventShape {
  name: string;
  inputs: readonly ParamType[];
  /** Types of the non-indexed inputs, in order: the ABI layout of the log's data. */
  dataTypes: readonly ParamType[];
  /** Every input is a static type of one word (all escrow events): decoded directly from the hex. */
  oneWordEach: boolean;
}

const SHAPES: ReadonlyMap<string, EventShape> = (() => {
  const shapes = new Map<string, EventShape>();
  TaskEscrow__factory.createInterface().forEachEvent((fragment) => {
    shapes.set(fragment.topicHash, {
      name: fragment.name,
      inputs: fragment.inputs,
      dataTypes: fragment.inputs.filter((input) => !input.indexed),
      oneWordEach: fragment.inputs.every((input) => /^(address|bool|u?int\d*|bytes([1-9]|[12]\d|3[0-2]))$/.test(input.type)),
    });
  });
  return shapes;
})();
const abi = AbiCoder.defaultAbiCoder();

/** Checksummed addresses by lowercase hex: a handful of addresses (posters, token, workers) recur in every range. */
const checksums = new Map<string, string>();
function checksum(lower: string): string {
  let address = checksums.get(lower);
  if (address === undefined) {
    address = getAddress(lower);
    if (checksums.size > 50_000) checksums.clear();
    checksums.set(lower, address);
  }
  return address;
}

/** One ABI word (64 hex characters) of a static type, as stored. */
function decodeWord(type: string, word: string): string | boolean {
  if (type === "address") return checksum(`0x${word.slice(24)}`);
  if (type === "bool") return BigInt(`0x${word}`) !== 0n;
  if (type.startsWith("uint")) return BigInt(`0x${word}`).toString();
  if (type.startsWith("int")) return BigInt.asIntN(Number(type.slice(3) || 256), BigInt(`0x${word}`)).toString();
  return `0x${word.slice(0, 2 * Number(type.slice(5)))}`; // bytesN, left-aligned
}

/** Decodes one escrow log; `blockTime` is the block's timestamp in seconds. */
export function decodeLog(chain: string, log: RawLog, blockTime: number): ChainEvent {
  const base = {
    chain,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash,
    logIndex: log.index,
    txHash: log.transactionHash,
    txIndex: log.transactionIndex,
    blockTime,
  };
  const decoded = decodeArgs(log.topics, log.data);
  if (!decoded) {
    return { ...base, event: UNKNOWN_EVENT, taskHash: null, args: { topics: log.topics.join(","), data: log.data } };
  }
  const taskHash = typeof decoded.args.taskHash === "string" ? decoded.args.taskHash : null;
  return { ...base, event: decoded.name, taskHash, args: decoded.args };
}

function decodeArgs(topics: readonly string[], data: string): { name: string; args: StoredArgs } | undefined {
  const shape = topics[0] === undefined ? undefined : SHAPES.get(topics[0]);
  if (!shape) return undefined;
  try {
    const args: StoredArgs = {};
    let topic = 1;
    let field = 0;
    if (shape.oneWordEach) {
      if (data.length !== 2 + 64 * shape.dataTypes.length || topics.length !== 1 + shape.inputs.length - shape.dataTypes.length) {
        return undefined;
      }
      for (const input of shape.inputs) {
        const word = input.indexed ? topics[topic++]!.slice(2) : data.slice(2 + 64 * field, 2 + 64 * ++field);
        args[input.name] = decodeWord(input.type, word.toLowerCase());
      }
      return { name: shape.name, args };
    }
    const values = abi.decode(shape.dataTypes, data);
    for (const input of shape.inputs) {
      let value: unknown;
      if (!input.indexed) value = values[field++];
      else if (input.isIndexable()) value = topics[topic++]; // an indexed string, bytes or array is kept as its hash
      else value = abi.decode([input], topics[topic++] ?? "0x")[0];
      args[input.name] = typeof value === "boolean" ? value : typeof value === "bigint" ? value.toString() : String(value);
    }
    return { name: shape.name, args };
  } catch {
    return undefined; // data that does not match the ABI: kept raw
  }
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
    event: row.event,
    taskHash: row.task_hash,
    args: JSON.parse(row.args) as StoredArgs,
    blockTime: Math.floor(Number(row.block_time) / 1000),
  };
}

import { AbiCoder, getAddress, type ParamType } from "ethers";
import type { TypedContractEvent } from "../../typechain-types/common";
import type { TaskEscrow } from "../../typechain-types/contracts/TaskEscrow";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";

type Filters = TaskEscrow["filters"];
/** Every event of the escrow's ABI by name (the bindings also key each one by its full signature). */
export type EscrowEventName = { [K in keyof Filters]: K extends `${string}(${string}` ? never : K }[keyof Filters];
type OutputOf<E> = E extends TypedContractEvent<infer _I, infer _O, infer Fields> ? Fields : never;

/** Arguments as stored: integers become decimal strings, so the JSON round trip loses nothing. Addresses checksummed. */
export type Stored<T> = { [K in keyof T]: T[K] extends bigint ? string : T[K] };

/** Each event's arguments, typed from the TaskEscrow bindings. */
export type EscrowEventArgs = { [N in EscrowEventName]: Stored<OutputOf<Filters[N]>> };

/** One decoded escrow event: `switch (e.event)` narrows `e.args`. */
export type EscrowEvent = { [N in EscrowEventName]: { event: N; args: EscrowEventArgs[N] } }[EscrowEventName];
export type EscrowEventOf<N extends EscrowEventName> = Extract<EscrowEvent, { event: N }>;

/** Name kept for a log the escrow's ABI does not know; its args keep the raw topics and data. */
export const UNKNOWN_EVENT = "Unknown";
export interface UnknownEscrowEvent {
  event: typeof UNKNOWN_EVENT;
  args: { topics: string; data: string };
}
export type DecodedEscrowEvent = EscrowEvent | UnknownEscrowEvent;

/** Where a log sits on its chain. */
export interface LogPosition {
  chain: string;
  blockNumber: number;
  blockHash: string;
  logIndex: number;
  txHash: string;
  txIndex: number;
  /** Block timestamp, seconds. */
  blockTime: number;
}

/** One escrow log as the indexer keeps it: where it sits, its task (null for escrow-wide events) and its event. */
export type EscrowLog = LogPosition & { taskHash: string | null } & DecodedEscrowEvent;

/** The escrow-wide events that change what every task call reads: the fee and the pause. */
export const ESCROW_STATE_EVENTS = ["FeeUpdated", "EscrowPausedAt", "EscrowUnpaused"] as const satisfies readonly EscrowEventName[];

/** A value as the decoder stores it. */
type StoredValue = string | boolean;
type StoredArgs = Record<string, StoredValue>;

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
/** Input names of each event, by event name. */
const INPUTS: ReadonlyMap<string, readonly string[]> = new Map([...SHAPES.values()].map((s) => [s.name, s.inputs.map((i) => i.name)]));
const abi = AbiCoder.defaultAbiCoder();

/** The names of every event the escrow's ABI declares. */
export function escrowEventNames(): string[] {
  return [...INPUTS.keys()];
}

/**
 * The typed event for a name and its stored arguments, or undefined when the ABI has no such event or the arguments
 * are not exactly its inputs, each a string or a boolean.
 */
function typed(name: string, args: StoredArgs): EscrowEvent | undefined {
  const inputs = INPUTS.get(name);
  if (!inputs || Object.keys(args).length !== inputs.length) return undefined;
  if (!inputs.every((input) => typeof args[input] === "string" || typeof args[input] === "boolean")) return undefined;
  // The only cast of the union: `args` holds exactly this event's ABI inputs as the decoder stores them, and the
  // bindings type the event's OutputObject from the same ABI fragment (test/core/escrow-events.test.ts).
  return { event: name, args } as EscrowEvent;
}

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
function decodeWord(type: string, word: string): StoredValue {
  if (type === "address") return checksum(`0x${word.slice(24)}`);
  if (type === "bool") return BigInt(`0x${word}`) !== 0n;
  if (type.startsWith("uint")) return BigInt(`0x${word}`).toString();
  if (type.startsWith("int")) return BigInt.asIntN(Number(type.slice(3) || 256), BigInt(`0x${word}`)).toString();
  return `0x${word.slice(0, 2 * Number(type.slice(5)))}`; // bytesN, left-aligned
}

/** The one decoder of escrow logs: the event and its arguments as stored, or undefined for a log the ABI does not know. */
export function decodeEscrowEvent(topics: readonly string[], data: string): EscrowEvent | undefined {
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
      return typed(shape.name, args);
    }
    const values = abi.decode(shape.dataTypes, data);
    for (const input of shape.inputs) {
      let value: unknown;
      if (!input.indexed) value = values[field++];
      else if (input.isIndexable())
        value = topics[topic++]; // an indexed string, bytes or array is kept as its hash
      else value = abi.decode([input], topics[topic++] ?? "0x")[0];
      args[input.name] = typeof value === "boolean" ? value : typeof value === "bigint" ? value.toString() : String(value);
    }
    return typed(shape.name, args);
  } catch {
    return undefined; // data that does not match the ABI: kept raw
  }
}

/** An escrow log with its position; a log the ABI does not know is kept raw as `Unknown`. */
export function decodeEscrowLog(position: LogPosition, topics: readonly string[], data: string): EscrowLog {
  const decoded = decodeEscrowEvent(topics, data);
  if (!decoded) return { ...position, taskHash: null, event: UNKNOWN_EVENT, args: { topics: topics.join(","), data } };
  const taskHash = "taskHash" in decoded.args ? decoded.args.taskHash : null;
  return { ...position, taskHash, ...decoded };
}

/** An event read back from storage (the decoder's own output as JSON); a stored row that does not fit its ABI throws. */
export function storedEscrowEvent(name: string, args: unknown): DecodedEscrowEvent {
  if (typeof args !== "object" || args === null) throw new Error(`stored ${name} event has no arguments`);
  const values: StoredArgs = {};
  for (const [key, value] of Object.entries(args)) {
    if (typeof value === "string" || typeof value === "boolean") values[key] = value;
  }
  if (name === UNKNOWN_EVENT && typeof values.topics === "string" && typeof values.data === "string") {
    return { event: UNKNOWN_EVENT, args: { topics: values.topics, data: values.data } };
  }
  const event = typed(name, values);
  if (!event) throw new Error(`stored ${name} event does not match the escrow's ABI`);
  return event;
}

/** Blocks, then logs within a block: the order the chain emitted them. */
export function compareLogs(a: Pick<LogPosition, "blockNumber" | "logIndex">, b: Pick<LogPosition, "blockNumber" | "logIndex">): number {
  return a.blockNumber - b.blockNumber || a.logIndex - b.logIndex;
}

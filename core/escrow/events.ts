import { AbiCoder, EventFragment, type ParamType } from "ethers";
import { checksumAddress } from "../addresses";
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
  /**
   * Where each input's word is, when every input is a static type of one word (all escrow events but
   * ReputationWriteFailed): those are read straight from the hex, without a generic coder.
   */
  words?: readonly Word[];
}

/** An input of one ABI word: its kind, its size (bits of an int, bytes of a bytesN), where it is. */
interface Word {
  name: string;
  kind: "address" | "bool" | "uint" | "int" | "bytes";
  size: number;
  /** Index in the topics, or 0 when the word is in the data. */
  topic: number;
  /** Offset of the word in the data's hex (after "0x"), when not a topic. */
  offset: number;
}

function wordsOf(inputs: readonly ParamType[]): Word[] | undefined {
  const words: Word[] = [];
  let topic = 1;
  let field = 0;
  for (const input of inputs) {
    const match = /^(address|bool|uint|int|bytes)(\d*)$/.exec(input.type);
    const kind = match?.[1] as Word["kind"] | undefined;
    const size = Number(match?.[2] || (kind === "uint" || kind === "int" ? 256 : 0));
    if (!kind || (kind === "bytes" && !(size >= 1 && size <= 32))) return undefined;
    words.push({ name: input.name, kind, size, topic: input.indexed ? topic++ : 0, offset: input.indexed ? 0 : 2 + 64 * field++ });
  }
  return words;
}

const SHAPES: ReadonlyMap<string, EventShape> = (() => {
  const shapes = new Map<string, EventShape>();
  // The fragments themselves: Interface.forEachEvent sorts the names with localeCompare, which loads ICU's collation
  // data (a quarter of a second in each new worker thread).
  for (const fragment of TaskEscrow__factory.createInterface().fragments) {
    if (!(fragment instanceof EventFragment)) continue;
    shapes.set(fragment.topicHash, {
      name: fragment.name,
      inputs: fragment.inputs,
      dataTypes: fragment.inputs.filter((input) => !input.indexed),
      words: wordsOf(fragment.inputs),
    });
  }
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
  return eventOf(name, args);
}

/**
 * The only cast of the union: `args` holds exactly the inputs of the ABI's event `name` as the decoder stores them
 * (checked by `typed`, or built from the event's shape by the decoder), and the bindings type the event's OutputObject
 * from the same ABI fragment (test/core/escrow-events.test.ts).
 */
function eventOf(name: string, args: StoredArgs): EscrowEvent {
  return { event: name, args } as EscrowEvent;
}

const HEX = /^0x[0-9a-f]*$/;
/** 51 hex zeros: a word starting with them holds an integer of 52 bits at most, exact as a JavaScript number. */
const SMALL = "0".repeat(51);
const ZERO_WORD = "0".repeat(64);

/** The word of a static input at `at` in `hex` (a topic, or the log's data), lowercase, as stored. */
function readWord(word: Word, hex: string, at: number, end: number): StoredValue {
  switch (word.kind) {
    case "address":
      return checksumAddress(`0x${hex.slice(at + 24, end)}`);
    case "bool":
      return !hex.startsWith(ZERO_WORD, at);
    case "uint":
      return hex.startsWith(SMALL, at) ? String(parseInt(hex.slice(at + 51, end), 16)) : BigInt(`0x${hex.slice(at, end)}`).toString();
    case "int":
      return BigInt.asIntN(word.size, BigInt(`0x${hex.slice(at, end)}`)).toString();
    case "bytes":
      return `0x${hex.slice(at, at + 2 * word.size)}`; // left-aligned
  }
}

/** The one decoder of escrow logs: the event and its arguments as stored, or undefined for a log the ABI does not know. */
export function decodeEscrowEvent(topics: readonly string[], data: string): EscrowEvent | undefined {
  const shape = topics[0] === undefined ? undefined : SHAPES.get(topics[0]);
  if (!shape) return undefined;
  try {
    const args: StoredArgs = {};
    const { words } = shape;
    if (words) {
      if (data.length !== 2 + 64 * shape.dataTypes.length || topics.length !== 1 + shape.inputs.length - shape.dataTypes.length) {
        return undefined;
      }
      // Lowercased once (the same string when it already is, as nodes send it); hex digits only.
      const lower = data.toLowerCase();
      if (!HEX.test(lower)) return undefined;
      for (const word of words) {
        if (word.topic === 0) {
          args[word.name] = readWord(word, lower, word.offset, word.offset + 64);
          continue;
        }
        const topic = topics[word.topic]!.toLowerCase();
        if (topic.length !== 66 || !HEX.test(topic)) return undefined;
        // A bytes32 topic (a task hash) is its own value.
        args[word.name] = word.kind === "bytes" && word.size === 32 ? topic : readWord(word, topic, 2, 66);
      }
      return eventOf(shape.name, args);
    }
    const values = abi.decode(shape.dataTypes, data);
    let topic = 1;
    let field = 0;
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
  const { chain, blockNumber, blockHash, logIndex, txHash, txIndex, blockTime } = position;
  const taskHash = "taskHash" in decoded.args ? decoded.args.taskHash : null;
  // Written out rather than spread (`{ ...position, taskHash, ...decoded }`), which costs more than the decoding itself;
  // `event` and `args` are the decoded event's pair, as they are.
  return { chain, blockNumber, blockHash, logIndex, txHash, txIndex, blockTime, taskHash, event: decoded.event, args: decoded.args } as EscrowLog;
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

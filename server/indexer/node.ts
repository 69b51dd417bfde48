import { toQuantity, type Provider } from "ethers";
import type { BlockRef } from "./cursor";

/**
 * What the indexer asks of a node: an ethers `Provider` has it. When the provider also has `send` (every JSON-RPC
 * provider, Hardhat's included), logs are read raw with eth_getLogs, skipping ethers' per-log formatting, which costs
 * more than the decoding itself on a large catch-up. Tests wrap a provider without `send` to inject refusals.
 */
export type IndexerProvider = Pick<Provider, "getBlockNumber" | "getBlock" | "getLogs"> & {
  send?: (method: string, params: unknown[]) => Promise<unknown>;
};

/** The fields of a log the indexer keeps (ethers' `Log` has them under the same names). */
export interface RawLog {
  /** The contract that emitted it. */
  address: string;
  blockNumber: number;
  blockHash: string;
  index: number;
  transactionHash: string;
  transactionIndex: number;
  topics: readonly string[];
  data: string;
}

/** The node could not serve a block the indexer expected (a reorg or a node behind its own head). */
export class ChainMovedError extends Error {
  override name = "ChainMovedError";
}

/**
 * The header of block `number`. With `send`, read raw (eth_getBlockByNumber without transactions): a catch-up reads
 * the header of every block with a log, and ethers' Block formatting of each cost more than the request itself.
 */
export async function readHeader(provider: IndexerProvider, chain: string, number: number): Promise<BlockRef> {
  if (provider.send) {
    const raw = (await provider.send("eth_getBlockByNumber", [toQuantity(number), false])) as JsonRpcHeader | null;
    if (!raw?.hash) throw new ChainMovedError(`${chain}: block ${number} is not available`);
    const found = Number(raw.number);
    if (found !== number) throw new ChainMovedError(`${chain}: the node answered block ${found} for block ${number}`);
    return { number: found, hash: raw.hash, parentHash: raw.parentHash, timestamp: Number(raw.timestamp) };
  }
  const block = await provider.getBlock(number);
  if (!block?.hash) throw new ChainMovedError(`${chain}: block ${number} is not available`);
  return { number: block.number, hash: block.hash, parentHash: block.parentHash, timestamp: block.timestamp };
}

interface JsonRpcHeader {
  number: string;
  hash: string | null;
  parentHash: string;
  timestamp: string;
}

/** The logs of the contracts at `addresses` (the escrow, and the registries beside it) in one query. */
export async function readLogs(provider: IndexerProvider, addresses: readonly string[], fromBlock: number, toBlock: number): Promise<RawLog[]> {
  const address = addresses.length === 1 ? addresses[0]! : [...addresses];
  if (!provider.send) return provider.getLogs({ address, fromBlock, toBlock });
  const logs = (await provider.send("eth_getLogs", [{ address, fromBlock: toQuantity(fromBlock), toBlock: toQuantity(toBlock) }])) as JsonRpcLog[];
  return logs.map((log) => ({
    address: log.address,
    blockNumber: Number(log.blockNumber),
    blockHash: log.blockHash,
    index: Number(log.logIndex),
    transactionHash: log.transactionHash,
    transactionIndex: Number(log.transactionIndex),
    topics: log.topics,
    data: log.data,
  }));
}

interface JsonRpcLog {
  address: string;
  blockNumber: string;
  blockHash: string;
  logIndex: string;
  transactionHash: string;
  transactionIndex: string;
  topics: string[];
  data: string;
}

import type { JsonRpcProvider, Provider } from "ethers";
import { ChainRpcProvider } from "./rpc";
import { TaskEscrow__factory, type TaskEscrow } from "../../typechain-types";
import type { ChainConfig } from "../config";
import type { ChainName } from "@market/core/chains";
import { MarketError } from "@market/core/errors";
import { isCallRevert } from "@market/core/revert";

export interface BatchCreate {
  supported: boolean;
  maxBatch: number;
}

/** One configured chain: its provider and its escrow binding. */
export interface Chain {
  name: ChainName;
  config: ChainConfig;
  provider: Provider;
  escrow: TaskEscrow;
  /** Whether the deployed escrow has batch creation, read from the contract once. */
  batchCreate(): Promise<BatchCreate>;
}

export interface ChainRegistry {
  list(): Chain[];
  get(name: string): Chain | undefined;
  /** The chain, or `CHAIN_NOT_CONFIGURED`. */
  require(name: string): Chain;
  /**
   * The chain a new task is posted on when the request names none: `arc` when postable, else the first postable chain
   * (`arc`, `0g`, `base` order); `CHAIN_NOT_CONFIGURED` when none is.
   */
  posting(): Chain;
}

/**
 * `CHAIN_UNAVAILABLE` with a fixed message: the provider's own message may name the RPC URL, and with it the key many
 * providers put in it. The cause is kept for the server's log, which writes it with URLs redacted (server/http/errors.ts).
 */
export function chainUnavailable(cause: unknown, chain?: string): MarketError {
  return new MarketError("CHAIN_UNAVAILABLE", `The chain${chain ? ` ${chain}` : ""}'s RPC did not answer; nothing changed. Retry later.`, { cause });
}

/** Runs a read against the chain; a node that does not answer is `CHAIN_UNAVAILABLE` (503), never a 500. */
export async function chainCall<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (cause) {
    throw chainUnavailable(cause);
  }
}

export function rpcProvider(config: Pick<ChainConfig, "rpcUrl" | "chainId">): JsonRpcProvider {
  return new ChainRpcProvider(config);
}

export function createChains(configs: ChainConfig[], options: { provider?: (config: ChainConfig) => Provider } = {}): ChainRegistry {
  const chains = configs.map((config): Chain => {
    const provider = options.provider?.(config) ?? rpcProvider(config);
    const escrow = TaskEscrow__factory.connect(config.escrow, provider);
    let batch: Promise<BatchCreate> | undefined;
    return {
      name: config.name,
      config,
      provider,
      escrow,
      batchCreate() {
        batch ??= escrow.maxBatch().then(
          (max) => ({ supported: max > 0n, maxBatch: Number(max) }),
          // An escrow without batch creation (the deployed arc version) has no maxBatch(): it reverts.
          (error: unknown) => {
            if (isCallRevert(error)) return { supported: false, maxBatch: 1 };
            // A node that did not answer is asked again next time.
            batch = undefined;
            throw chainUnavailable(error, config.name);
          },
        );
        return batch;
      },
    };
  });
  const byName = new Map(chains.map((c) => [c.name as string, c]));
  const require = (name: string) => {
    const chain = byName.get(name);
    if (!chain) throw new MarketError("CHAIN_NOT_CONFIGURED", `Chain ${name} is not configured on this server.`);
    return chain;
  };
  return {
    list: () => chains,
    get: (name) => byName.get(name),
    require,
    posting: () => {
      const chain = chains.find((c) => c.config.postable);
      if (!chain) throw new MarketError("CHAIN_NOT_CONFIGURED", "No postable chain is configured on this server (POSTABLE_CHAINS).");
      return chain;
    },
  };
}

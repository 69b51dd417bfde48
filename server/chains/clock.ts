import type { Chain } from "./index";

/**
 * The service's clock: chain time wherever a chain is ahead of the wall clock. Deadlines, claim and appeal windows are
 * decided by the escrow against block timestamps, so the API compares them with the chain's time too: a local chain
 * moved with `evm_increaseTime` (tasks expire, claims open) is seen through the API as the escrow sees it.
 *
 * `now()` is the latest block timestamp seen on any configured chain, carried forward by the wall time elapsed since it
 * was read, and never behind the wall clock (the next block cannot be older than the last one, and on a live chain it
 * carries about the wall clock's time); it never goes backwards. Heads are read every `intervalMs` in the background.
 */
export interface ChainClock {
  now(): number;
  /** Reads every chain's latest block now (a chain that does not answer is skipped). */
  refresh(): Promise<void>;
  start(): void;
  stop(): void;
}

export function createChainClock(chains: Pick<Chain, "provider">[], options: { intervalMs: number; wall?: () => number }): ChainClock {
  const wall = options.wall ?? Date.now;
  /** Chain time minus wall time, at the last read (ms); only ever grows. */
  let aheadMs = 0;
  let last = 0;
  let timer: NodeJS.Timeout | undefined;

  async function refresh() {
    await Promise.all(
      chains.map(async (chain) => {
        const block = await chain.provider.getBlock("latest").catch(() => null);
        if (block) aheadMs = Math.max(aheadMs, block.timestamp * 1000 - wall());
      }),
    );
  }

  return {
    now() {
      last = Math.max(last, wall() + aheadMs);
      return last;
    },
    refresh,
    start() {
      if (timer) return;
      const tick = () => {
        void refresh().finally(() => {
          if (timer) timer = setTimeout(tick, options.intervalMs).unref();
        });
      };
      timer = setTimeout(tick, 0).unref();
    },
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

import type { ChainName } from "@market/core/chains";
import { EVIDENCE_GAS, type ChainWallet } from "../chain";
import { clientError, type ApiError } from "../errors";
import type { Clock } from "./schedule";

/** How long a gas check of one chain is trusted: the accepts of one browse share it. */
export const GAS_CHECK_MS = 10_000;

/**
 * Whether the worker can pay the gas of a delivery on a chain before it takes a task there (an agent never accepts
 * what it cannot deliver): its native balance covers one submitEvidence at the current max fee, or a sponsor pays it.
 * A shortfall is reported once (INSUFFICIENT_GAS) until the balance covers it again; an RPC that does not answer counts
 * as a shortfall too (nothing could be delivered), reported with its reason.
 */
export function createGasGate(deps: {
  clock: Clock;
  wallet: (chain: ChainName) => Promise<ChainWallet>;
  /** True when a sponsor pays this wallet's next delivery on the chain (hosted agents, `MARKET_GAS_SPONSOR=on`). */
  sponsored?: (chain: ChainName) => Promise<boolean>;
  report: (error: ApiError | Error) => void;
}) {
  const checks = new Map<ChainName, { at: number; ready: Promise<boolean> }>();
  const reported = new Set<ChainName>();

  async function check(chain: ChainName): Promise<boolean> {
    try {
      if (await deps.sponsored?.(chain)) return true;
      const wallet = await deps.wallet(chain);
      const { balance, need } = await wallet.gasCost(EVIDENCE_GAS);
      if (balance >= need) {
        reported.delete(chain);
        return true;
      }
      if (!reported.has(chain)) {
        reported.add(chain);
        deps.report(
          clientError(
            "INSUFFICIENT_GAS",
            `Wallet ${wallet.wallet.address} has ${balance} wei of native gas on ${chain}; a delivery needs about ${need}. It accepts no task on ${chain} until it has it: send it gas (docs/hosted-agents.md, "Gas").`,
          ),
        );
      }
      return false;
    } catch (error) {
      deps.report(error as Error);
      return false;
    }
  }

  return {
    /** Whether a task on `chain` may be accepted now. */
    ready(chain: ChainName): Promise<boolean> {
      const now = deps.clock.now();
      const cached = checks.get(chain);
      if (cached && now - cached.at < GAS_CHECK_MS) return cached.ready;
      const ready = check(chain);
      checks.set(chain, { at: now, ready });
      return ready;
    },
  };
}

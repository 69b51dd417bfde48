import type { AnyProjection } from "./indexer/projection";
import { createTaskProjection } from "./indexer/task-projection";
import { createReputationProjection } from "./reputation/projection";
import { createOnchainReputationProjection } from "./reputation/onchain-projection";
import { createIdentityProjection } from "./identity/projection";
import { createServiceSalesProjection } from "./services/projection";
import { createEventLogProjection } from "./events/projection";
import { creditRuleFromEnv } from "./config";
import type { CreditRule } from "@market/core/reputation";

/**
 * The read models every indexer keeps, in apply order (rolled back in reverse). Reputation comes first: it reads who
 * worked each task, and who assigned them, from the task state as it was before the range, and follows the range's
 * own creations, assignments and releases with the task projection's rule. Service sales count each settled paid
 * rental once (`sold_count`), keyed by the task, so nothing replayed counts twice. The registries' projections (identity
 * tokens, the reputation contract's numbers) read only their own events. `credit` decides which payouts credit reputation
 * (the environment's REPUTATION_* by default: a worker thread calls this without arguments).
 */
export function defaultProjections(credit: CreditRule = creditRuleFromEnv(process.env)): AnyProjection[] {
  return [
    createReputationProjection(credit),
    createTaskProjection(),
    createServiceSalesProjection(),
    createIdentityProjection(),
    createOnchainReputationProjection(),
    // After the task projection (its rows give each event its audience), so rolled back before it.
    createEventLogProjection(),
  ];
}

/** How a worker thread finds the same list (functions cannot cross the thread boundary). */
export const DEFAULT_PROJECTIONS_MODULE = { module: __filename.replace(/\.ts$/, ""), export: "defaultProjections" };

import type { Projection } from "./indexer/projection";
import { createTaskProjection } from "./indexer/task-projection";
import { createReputationProjection } from "./reputation/projection";

/**
 * The read models every indexer keeps, in apply order (rolled back in reverse). Reputation comes first: it reads who
 * worked each task, and who assigned them, from the task state as it was before the range, and follows the range's
 * own creations, assignments and releases with the task projection's rule.
 */
export function defaultProjections(): Projection[] {
  return [createReputationProjection(), createTaskProjection()];
}

/** How a worker thread finds the same list (functions cannot cross the thread boundary). */
export const DEFAULT_PROJECTIONS_MODULE = { module: __filename.replace(/\.ts$/, ""), export: "defaultProjections" };

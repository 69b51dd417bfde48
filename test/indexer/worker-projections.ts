/** Loaded by the indexer's worker thread in the worker test: the projections named by module path and export. */
import { createTaskProjection, type Projection } from "../../server/indexer";

export function workerProjections(): Projection[] {
  return [createTaskProjection()];
}

/**
 * `npm run check:imports`: the repository's layering (scripts/lib/layers.ts) and server/'s DAG.
 * - Layers: core <- sdk <- cli, core <- server; core imported as the package @market/core outside core/; the server
 *   into the SDK only through its entry files; no import cycle between any of the repository's files; no I/O in core;
 *   every package a folder imports declared by its package.
 * - server/: no import cycle between its files or its folders (type-only imports count), and nothing but the other
 *   composition root imports server/app.ts.
 * Exits 1 and names each problem otherwise.
 */
import path from "node:path";
import { serverImportProblems } from "./lib/import-graph";
import { layerProblems } from "./lib/layers";

const root = path.resolve(__dirname, "..");
const problems = [...layerProblems(root), ...serverImportProblems(path.join(root, "server"))];
for (const problem of problems) console.error(problem);
console.log(
  problems.length === 0
    ? "layers kept (core <- sdk <- cli, core <- sdk <- web, core <- server through the SDK's entry files; core as @market/core), no import cycles, core does no I/O, every package declared; server/: no cycles between files or folders, only server/index.ts imports app.ts"
    : `${problems.length} problem(s)`,
);
process.exit(problems.length === 0 ? 0 : 1);

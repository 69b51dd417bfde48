/**
 * `npm run check:imports`: server/ is a DAG. No import cycle between its files or its folders (type-only imports
 * count), and nothing but the other composition root imports server/app.ts. Exits 1 and names each problem otherwise.
 */
import path from "node:path";
import { serverImportProblems } from "./lib/import-graph";

const problems = serverImportProblems(path.resolve(__dirname, "..", "server"));
for (const problem of problems) console.error(problem);
console.log(
  problems.length === 0 ? "server/: no import cycles between files or folders; only server/index.ts imports app.ts" : `${problems.length} problem(s)`,
);
process.exit(problems.length === 0 ? 0 : 1);

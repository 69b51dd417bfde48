/**
 * The results file (`<file>.results.csv` or `--results`): the engine's outcomes table (sdk/src/posting/journal/
 * outcomes.ts), one line per row of the task file, rewritten whole (write then rename) each time it is shown, so it is
 * never half-written and a run killed between steps leaves it agreeing with the journal.
 */
import { existsSync, renameSync, writeFileSync } from "node:fs";
import type { OutcomeSink } from "../../sdk/src/posting/journal";

export { RESULT_COLUMNS, RowStatus, type RowOutcome } from "../../sdk/src/posting/journal";

export function resultsFile(resultsPath: string): OutcomeSink {
  return {
    name: resultsPath,
    write(csv) {
      const temporary = `${resultsPath}.tmp-${process.pid}`;
      writeFileSync(temporary, csv);
      renameSync(temporary, resultsPath);
    },
    exists: () => existsSync(resultsPath),
  };
}

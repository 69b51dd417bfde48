/**
 * The built `market` command (cli/dist) run in this process with a pause after a journaled step of `post-tasks`, so a
 * test can kill the run inside that window (test/cli/resume.test.ts). The pause is the command's embedding hook,
 * which the `market` binary never passes:
 *   node -r ts-node/register/transpile-only paused-cli.ts <funding|funded> <ms> <market arguments...>
 */
import { runAndExit } from "../../cli/dist/cli/src/main";

// Only as a program: Hardhat loads every file under test/ when it runs the suite.
if (require.main === module) {
  const [step, ms, ...args] = process.argv.slice(2);
  runAndExit(args, {
    postTasks: {
      async afterJournaled(journaled) {
        if (journaled !== step) return;
        // Said once every write of the step is done, so a test can kill the run inside the pause.
        process.stderr.write(`paused after ${step}\n`);
        await new Promise((resolve) => setTimeout(resolve, Number(ms)));
      },
    },
  });
}

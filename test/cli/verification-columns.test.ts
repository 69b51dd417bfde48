/**
 * Bulk rows that set `auto` verification's rules: the CLI posts them with those criteria, so a task pays only for an
 * answer that passes them (without the columns: the bulk default, min_length 10 at 60%).
 */
import { expect } from "chai";
import path from "node:path";
import { startStack, type Stack } from "../support/stack";
import { cliEnv, ensureCliBuilt, readResults, runCli, taskDir } from "../support/cli";
import { expectOk } from "../server/expect";
import type { TaskView } from "@market/core/api";

describe("cli: verification columns", function () {
  let s: Stack;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    ensureCliBuilt();
    s = await startStack();
    env = await cliEnv(s, s.poster);
  });
  after(async function () {
    await s.close();
  });

  it("posts each row with the criteria its columns set, checked like the API's", async function () {
    const dir = taskDir({
      "t.csv": [
        "instructions,reward,privacy,Verification_Min_Length,verification_keywords,verification_regex,PASS_THRESHOLD",
        "Summarise the quarterly report.,1,public,40,revenue;margin,^Summary:,100",
        "Name a prime number.,1,public,,,,",
        "",
      ].join("\n"),
    });
    const run = await runCli(["post-tasks", "--file", "t.csv", "--yes"], { env, cwd: dir });
    expect(run.status, run.stderr).to.equal(0);
    const rows = readResults(path.join(dir, "t.csv.results.csv"));
    await s.sync(); // listed by the CLI; a task's view needs it indexed too
    const criteria = [];
    for (const row of rows) {
      const view = expectOk(await s.call<TaskView>("GET", `/api/v1/tasks/${row.task_hash}`));
      criteria.push(view.meta.verificationCriteria);
    }
    expect(criteria).to.deep.equal([
      { min_length: 40, pass_threshold: 100, contains_keywords: ["revenue", "margin"], regex_pattern: "^Summary:" },
      { min_length: 10, pass_threshold: 60 },
    ]);
  });

  it("refuses a row whose rules the API would refuse, naming the column, sending nothing", async function () {
    const dir = taskDir({ "t.csv": "instructions,reward,verification_regex\nDo it.,1,(a+)+$\n" });
    const run = await runCli(["post-tasks", "--file", "t.csv", "--yes"], { env, cwd: dir });
    expect(run.status).to.equal(1);
    expect(run.stderr).to.contain("line 2, column verification_regex: CRITERIA_REGEX_UNSAFE");
  });
});

/**
 * Reputation griefing with criteria no output can meet (docs/security.md, issue 14 item 6): the API refuses them at
 * posting, and WorkerRuntime never accepts a task listed with them (one listed before the API refused them).
 */
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { WorkerRuntime, type RuntimeEvent } from "../../sdk/src/runtime";
import { unsatisfiable } from "@market/core/verification/criteria";

const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster), workerKey: await s.apiKeyFor(s.worker) }));

describe("hardening: unsatisfiable criteria", function () {
  this.timeout(120_000);
  let s: Stack;
  let keys: { posterKey: string; workerKey: string };
  beforeEach(async function () {
    ({ stack: s, seeded: keys } = await seededStack());
  });
  afterEach(async function () {
    await s.close();
  });

  it("unsatisfiable: min above the output cap, a keyword longer than max, unless a lower threshold forgives them", function () {
    expect(unsatisfiable({ min_length: 500_001 }).map((i) => i.code)).to.deep.equal(["CRITERIA_UNSATISFIABLE"]);
    expect(unsatisfiable({ min_length: 500_000 })).to.deep.equal([]);
    expect(unsatisfiable({ max_length: 5, contains_keywords: ["ok", "longword"] }).map((i) => i.field)).to.deep.equal([
      "verificationCriteria.contains_keywords[1]",
    ]);
    expect(unsatisfiable({ max_length: 8, contains_keywords: ["longword"] })).to.deep.equal([]);
    // Two rules, one unmeetable: the best score is 50, enough for a threshold of 50.
    expect(unsatisfiable({ min_length: 600_000, contains_keywords: ["x"], pass_threshold: 50 })).to.deep.equal([]);
    expect(unsatisfiable({ min_length: 600_000, contains_keywords: ["x"], pass_threshold: 51 })).to.have.length(1);
  });

  it("unsatisfiable: a regex that can match nothing, or whose shortest match cannot fit max_length or the output cap", function () {
    const fields = (criteria: Parameters<typeof unsatisfiable>[0]) => unsatisfiable(criteria).map((i) => i.field);
    expect(fields({ regex_pattern: "a[]b" })).to.deep.equal(["verificationCriteria.regex_pattern"]);
    expect(fields({ regex_pattern: "x{400000}y{100001}" })).to.deep.equal(["verificationCriteria.regex_pattern"]);
    expect(fields({ regex_pattern: "Hamlet \\d{3}", max_length: 8 })).to.deep.equal(["verificationCriteria.regex_pattern"]);
    // The inner space is not counted (a space could be trimmed): 9 characters decided, so 9 is let through.
    expect(fields({ regex_pattern: "Hamlet \\d{3}", max_length: 9 })).to.deep.equal([]);
    // Whitespace a match may hold at either end is trimmed away before the length rules count.
    expect(fields({ regex_pattern: "\\s{20}ok", max_length: 2 })).to.deep.equal([]);
    expect(fields({ regex_pattern: "ok\\s*", max_length: 2 })).to.deep.equal([]);
    // Optional parts, alternatives and lookarounds count as their shortest way through.
    expect(fields({ regex_pattern: "(?:long alternative|ok)(?=.{50})(abc)?", max_length: 2 })).to.deep.equal([]);
    expect(fields({ regex_pattern: "[a-z]{5}|[0-9]{4}", max_length: 3 })).to.deep.equal(["verificationCriteria.regex_pattern"]);
    // Without the u flag an astral character is two units of the pattern but one character of the output.
    expect(fields({ regex_pattern: "\ud83d\ude00\ud83d\ude00", max_length: 2 })).to.deep.equal([]);
    // A keyword and a regex both too long for max_length: failing max_length alone would pass both (2 of 3 rules).
    expect(fields({ max_length: 3, contains_keywords: ["Hamlet"], regex_pattern: "Ophelia", pass_threshold: 66 })).to.deep.equal([]);
    expect(fields({ max_length: 3, contains_keywords: ["Hamlet"], regex_pattern: "Ophelia", pass_threshold: 67 })).to.have.length(2);
  });

  it("POST /api/v1/tasks refuses them with INVALID_CRITERIA (detail CRITERIA_UNSATISFIABLE); nothing is built", async function () {
    for (const verificationCriteria of [
      { min_length: 600_000 },
      { max_length: 3, contains_keywords: ["Hamlet"] },
      { max_length: 5, regex_pattern: "^Verdict: (yes|no)$" },
    ]) {
      const answer = await s.call("POST", "/api/v1/tasks", {
        key: keys.posterKey,
        body: {
          ...s.publicTask(`Unmeetable ${JSON.stringify(verificationCriteria)}`, { verificationCriteria }),
          amount: "5000000",
          duration: 86_400,
        },
      });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(400);
      expect(answer.body.error.code).to.equal("INVALID_CRITERIA");
      expect(answer.body.error.details?.map((d) => d.code)).to.include("CRITERIA_UNSATISFIABLE");
    }
  });

  it("WorkerRuntime skips a listed task whose criteria no output can meet, and takes the others", async function () {
    const unmeetable = await s.post(
      s.poster,
      keys.posterKey,
      s.publicTask(`Unmeetable task ${Date.now()}`, { verificationCriteria: { min_length: 10 } }),
    );
    // Listed before the API refused such criteria.
    await s.db
      .updateTable("listings")
      .set({ verification_criteria: JSON.stringify({ min_length: 600_000 }) })
      .where("task_hash", "=", unmeetable.taskHash.toLowerCase())
      .execute();
    const fine = await s.post(s.poster, keys.posterKey, s.publicTask(`Meetable task ${Date.now()}`, { verificationCriteria: { min_length: 10 } }));
    const options = await s.runtimeOptions(s.worker, keys.workerKey);
    const events: RuntimeEvent[] = [];
    const runtime = new WorkerRuntime({
      ...options,
      capabilities: [],
      maxConcurrentTasks: 2,
      browseIntervalMs: 100,
      executeTask: async () => ({ output: "A careful answer of more than ten characters." }),
    }).on((event) => events.push(event));
    await runtime.start();
    try {
      const end = Date.now() + 60_000;
      while (!events.some((e) => e.type === "task_finalized")) {
        if (Date.now() > end) throw new Error("the meetable task was not finalized");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // Three more browses: the unmeetable task is still never taken.
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await runtime.stop();
    }
    expect(await s.escrow.queryFilter(s.escrow.filters.WorkerAssigned(fine.taskHash))).to.have.length(1);
    expect(await s.escrow.queryFilter(s.escrow.filters.WorkerAssigned(unmeetable.taskHash))).to.have.length(0);
  });
});

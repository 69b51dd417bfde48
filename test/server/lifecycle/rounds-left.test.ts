/**
 * Rounds left, told by two routes from one rule (core/escrow `roundsLeft`, `roundsUnused`): a round finalized after
 * the task's deadline answers the rounds left that the worker's task list shows for it, none (issue 24, item 4).
 */
import { expect } from "chai";
import type { AssignedTasksAnswer } from "@market/core/api";
import { type TestServer } from "../harness";
import { expectOk } from "../expect";
import { DAY, EscrowStatus, FAILING, partiesServer, steps, type Steps } from "./helpers";

describe("lifecycle: rounds left past the deadline", function () {
  let s: TestServer;
  let t: Steps;
  let agentKey: string;
  let posterKey: string;

  beforeEach(async function () {
    ({
      server: s,
      seeded: { agentKey, posterKey },
    } = await partiesServer());
    t = steps(s);
  });
  afterEach(async function () {
    await s.close();
  });

  it("a round delivered before the deadline and finalized after it: finalize and the assigned list both tell 0 rounds left", async function () {
    const { taskHash } = await t.postPublic(posterKey);
    expectOk(await t.accept(agentKey, taskHash));
    const txHash = await t.deliverOnChain(s.worker, agentKey, taskHash, FAILING);
    await t.expectState(taskHash, "submitted", EscrowStatus.Submitted);
    await t.travel(DAY);

    const finalized = expectOk(await t.finalize(agentKey, taskHash, txHash));
    const { tasks } = expectOk(await s.call<AssignedTasksAnswer>("GET", "/api/v1/a2a/tasks/assigned", { key: agentKey }));
    const listed = tasks.find((task) => task.meta.taskHash === taskHash.toLowerCase());
    expect(listed, "the task in the worker's list").to.not.equal(undefined);
    expect({ finalize: finalized.roundsLeft, assigned: listed!.roundsLeft }).to.deep.equal({ finalize: 0, assigned: 0 });
  });
});

/**
 * Output visible only once its evidence is on chain (docs/security.md, issue 14 item 7): the poster cannot read a
 * stored result (or question it through the advisory verify route) before that round's submitEvidence is indexed,
 * so it cannot dispute a result whose evidence never lands; the worker reads what it stored.
 */
import { expect } from "chai";
import type { TaskView, VerifyAnswer } from "@market/core/api";
import type { TestServer } from "../harness";
import { expectError, expectOk } from "../expect";
import { partiesServer, PASSING, steps } from "../lifecycle/helpers";

describe("hardening: output visible only once its evidence is indexed", function () {
  let s: TestServer | undefined;
  afterEach(async function () {
    await s?.close();
    s = undefined;
  });

  it("the poster sees no output and gets EVIDENCE_NOT_CONFIRMED from verify until submitEvidence is indexed", async function () {
    const {
      server,
      seeded: { agentKey, posterKey },
    } = await partiesServer();
    s = server;
    const t = steps(server);
    const { taskHash } = await t.postPublic(posterKey, "manual");
    expectOk(await t.accept(agentKey, taskHash));
    const delivered = await t.deliver(agentKey, taskHash, PASSING);
    const view = async (key: string) => expectOk(await server.call<TaskView>("GET", `/api/v1/tasks/${taskHash}`, { key })).state.resultData;
    const verify = (key: string) =>
      server.call<VerifyAnswer>("POST", "/api/v1/verification/verify", { key, body: { taskHash, verificationCriteria: { min_length: 5 } } });

    expect(await view(posterKey)).to.equal(undefined);
    expect((await view(agentKey))?.output).to.equal(PASSING);
    expectError(await verify(posterKey), "EVIDENCE_NOT_CONFIRMED");
    const posted = await t.posted(posterKey, taskHash);
    expect(posted.state.resultData?.output).to.equal(undefined);

    await t.sign(server.worker, delivered.unsignedTx);
    await server.sync();
    expect((await view(posterKey))?.output).to.equal(PASSING);
    expect(expectOk(await verify(posterKey)).verificationResult.passed).to.equal(true);
  });
});

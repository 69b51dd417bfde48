/**
 * The SDK's methods in the spec's shapes ("Client surfaces"), beside the object forms they always took (issue 24,
 * item 6): `deliverResult(taskId, result)`; and `ApiError.code` typed as one of the error codes of core/errors.ts.
 */
import { expect } from "chai";
import { stackFixture, type Stack } from "../support/stack";
import { MarketClient } from "../../sdk/src/client";
import { ApiError, type ApiErrorCode } from "../../sdk/src/errors";
import { isErrorCode } from "@market/core/errors";

/** The poster's API key; the worker registered as an agent on arc (no tags), with its API key. */
const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster), workerKey: await s.registerAgent(s.worker, []) }));

describe("sdk: the spec's method shapes", function () {
  this.timeout(120_000);
  let s: Stack;
  let poster: MarketClient;
  let worker: MarketClient;

  beforeEach(async function () {
    const { stack, seeded } = await seededStack();
    s = stack;
    poster = new MarketClient(await s.clientOptions(s.poster, seeded.posterKey));
    worker = new MarketClient(await s.clientOptions(s.worker, seeded.workerKey));
  });
  afterEach(async function () {
    await s.close();
  });

  async function acceptedTasks(count: number): Promise<string[]> {
    const run = await poster.postTasks(
      Array.from({ length: count }, (_, i) => ({
        instructions: `Name a river of Europe, answer number ${i + 1}.`,
        amountRaw: 1_000_000n,
        privacy: "public" as const,
        verificationMode: "manual" as const,
      })),
    );
    expect(run.posted).to.equal(count);
    await s.sync();
    const hashes = run.results.map((r) => r.taskHash!);
    for (const taskHash of hashes) await worker.acceptTask(taskHash);
    return hashes;
  }

  it("deliverResult(taskId, result) with the output text or { output }, and the object form, each deliver and finalize", async function () {
    const [text, object, legacy] = await acceptedTasks(3);
    const delivered = [
      await worker.deliverResult(text!, "The Danube flows through ten countries."),
      await worker.deliverResult(object!, { output: "The Rhine rises in the Swiss Alps." }),
      await worker.deliverResult({ taskHash: legacy!, output: "The Loire is the longest river of France." }),
    ];
    expect(delivered.map((d) => [d.taskHash, d.round, d.status])).to.deep.equal([
      [text, 1, "awaiting_verification"],
      [object, 1, "awaiting_verification"],
      [legacy, 1, "awaiting_verification"],
    ]);
  });

  it("refuses a result that is no output (VALIDATION_FAILED) before anything is sent; ApiError.code is one of the error codes", async function () {
    const [taskHash] = await acceptedTasks(1);
    const refused = await worker.deliverResult(taskHash!, { text: "no output" } as unknown as { output: string }).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(ApiError);
    const code: ApiErrorCode = (refused as ApiError).code;
    expect(code).to.equal("VALIDATION_FAILED");
    const fromApi = await worker.getTask(`0x${"ab".repeat(32)}`).catch((e: unknown) => e as ApiError);
    expect([(fromApi as ApiError).code, isErrorCode((fromApi as ApiError).code)]).to.deep.equal(["TASK_NOT_FOUND", true]);
    const still = await worker.assignedTasks();
    expect(still.tasks.find((t) => t.meta.taskHash === taskHash)?.state.status).to.equal("assigned");
  });
});

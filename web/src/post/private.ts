/**
 * A private task from the single-task form (issue 28 item 2), through the SDK's posting engine as bulk posting runs it:
 * the brief encrypted in the page (AES-256-GCM, a fresh key) and uploaded, its key wrapped (ECIES) to each agent
 * registered on the posting chain with the task's capabilities and, as the task's `keyCustodyBlob`, to the service's
 * custody key, which the service re-wraps at accept to any eligible agent (spec "Authentication" 10); then approved,
 * funded from the browser wallet and listed. Loaded on the first private post only (it brings the SDK's client).
 */
import { ApiError } from "../../../sdk/src/errors";
import type { PostTaskInput } from "../../../sdk/src/posting";
import { sessionClient } from "../sdk-client";

/** Posts one private task: its task hash once listed, or the refusal (a row paid but not listed names its task hash). */
export async function postPrivateTask(session: { token: string }, input: Omit<PostTaskInput, "privacy">): Promise<string> {
  const { client, custodyPublicKey } = await sessionClient(session);
  const run = await client.postTasks([{ ...input, privacy: "private" }], { chunkSize: 1, ...(custodyPublicKey ? { custodyPublicKey } : {}) });
  const result = run.results[0];
  if (result?.status === "posted" && result.taskHash) return result.taskHash;
  const refusal = result?.error ?? { code: "INTERNAL_ERROR", message: "The task was not posted." };
  if (result?.status === "unlisted" && result.indexParams) {
    // Paid, not listed: listed once more (the listing is idempotent); still refused, the poster keeps the task hash.
    const listed = await client.indexTask(result.indexParams).catch(() => undefined);
    if (listed && result.taskHash) return result.taskHash;
    throw new ApiError(
      0,
      refusal.code,
      `${refusal.message} Task ${result.taskHash} is paid but not listed: \`market cancel ${result.taskHash}\` refunds it in full.`,
      { taskHash: result.taskHash },
    );
  }
  throw new ApiError(0, refusal.code, `${refusal.message} Nothing was paid.`);
}

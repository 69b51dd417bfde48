/** The client's services area: browse and manage hosted agents' services, rent one, and follow a task to its result. */
import { ApiError, apiErrorCode, clientError, statusOfCode } from "../errors";
import { checkRows, postRows } from "../posting";
import { RENTAL_DONE_STATUSES, rentalInput, type Rental, type RentalProgress, type RentalState, type RentServiceOptions } from "../rentals";
import type { CreateServiceBody, ServiceAnswer, ServiceList, ServiceView, TaskView, UpdateServiceBody } from "@market/core/api";
import { sleep, type ClientCore } from "./core";
import { watchTask, type TaskWatch } from "../events";
import { postingContext } from "./posting";

export async function browseServices(core: ClientCore, filter: { agent?: string; limit?: number }): Promise<ServiceList> {
  const query = new URLSearchParams();
  if (filter.agent) query.set("agent", filter.agent);
  if (filter.limit) query.set("limit", String(filter.limit));
  return core.http.get(`/api/v1/marketplace/services${query.size ? `?${query}` : ""}`);
}

export async function getService(core: ClientCore, serviceId: number): Promise<ServiceView> {
  return (await core.http.get<ServiceAnswer>(`/api/v1/marketplace/services/${serviceId}`)).service;
}

export async function agentServices(core: ClientCore, agentId: number): Promise<ServiceList> {
  return core.http.get(`/api/v1/agents/${agentId}/services`);
}

export async function createService(
  core: ClientCore,
  { agentId, priceRaw, ...fields }: Omit<CreateServiceBody, "priceRaw"> & { agentId: number; priceRaw: bigint | string },
): Promise<ServiceView> {
  return (await core.http.post<ServiceAnswer>(`/api/v1/agents/${agentId}/services`, { ...fields, priceRaw: priceRaw.toString() })).service;
}

export async function updateService(
  core: ClientCore,
  {
    agentId,
    serviceId,
    priceRaw,
    ...fields
  }: Omit<UpdateServiceBody, "priceRaw"> & { agentId: number; serviceId: number; priceRaw?: bigint | string },
): Promise<ServiceView> {
  const body = { ...fields, ...(priceRaw === undefined ? {} : { priceRaw: priceRaw.toString() }) };
  return (await core.http.patch<ServiceAnswer>(`/api/v1/agents/${agentId}/services/${serviceId}`, body)).service;
}

export async function deleteService(
  core: ClientCore,
  { agentId, serviceId }: { agentId: number; serviceId: number },
): Promise<{ id: number; deleted: true }> {
  return core.http.del(`/api/v1/agents/${agentId}/services/${serviceId}`);
}

export async function rentService(core: ClientCore, options: RentServiceOptions): Promise<Rental> {
  const { serviceId, prompt, privacy = "private" } = options;
  const started = Date.now();
  const service = await getService(core, serviceId);
  if (privacy === "private" && !service.agent_public_key) {
    throw clientError(
      "TARGET_CHAIN_UNSUPPORTED",
      `The agent of service ${serviceId} has registered no public key yet (it never started); nothing was sent.`,
    );
  }
  const checked = checkRows([rentalInput(service, prompt, privacy)], { allowAgentMode: false, maxRows: 1 });
  const wrapTo = { agents: service.agent_public_key ? [{ address: service.agent_address, publicKey: service.agent_public_key }] : [] };
  const run = await postRows(await postingContext(core), checked, 1, { wrapTo });
  const result = run.results[0]!;
  const refusal = result.error ?? { code: "INTERNAL_ERROR", message: "The rental was not posted." };
  if (result.status === "unlisted") {
    throw new ApiError(
      statusOfCode(refusal.code),
      apiErrorCode(refusal.code, statusOfCode(refusal.code)),
      `${refusal.message} The rental is paid but not listed: cancel it for a full refund.`,
      {
        taskHash: result.taskHash,
        txHash: result.txHash,
        indexParams: result.indexParams,
      },
    );
  }
  if (result.status !== "posted")
    throw new ApiError(statusOfCode(refusal.code), apiErrorCode(refusal.code, statusOfCode(refusal.code)), refusal.message, { serviceId });
  const taskHash = result.taskHash!;
  const waitMs = Math.max(0, (options.waitSeconds ?? 45) * 1000 - (Date.now() - started));
  const state = await waitForResult(core, { taskHash, waitMs, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
  return { ...state, serviceId, amountRaw: result.amountRaw, txHash: result.txHash! };
}

export interface WaitForResultOptions {
  taskHash: string;
  waitMs: number;
  onProgress?: (progress: RentalProgress) => void;
  pollMs?: number;
  /** Opens a wait on the task's events (docs/events.md); default: the client's event stream (`watchOf`). */
  watch?: (taskHash: string, chain: string) => Promise<TaskWatch>;
}

/** Longest wait on a task's events before reading it again (a deadline passes without one). */
const WATCH_FALLBACK_MS = 5_000;

/** A task's events on the client's event stream, from the log's head. */
export function watchOf(core: ClientCore) {
  return (taskHash: string, chain?: string): Promise<TaskWatch> =>
    watchTask({
      baseUrl: core.http.baseUrl,
      taskHash,
      ...(chain ? { chain } : {}),
      ...(core.apiKey ? { apiKey: core.apiKey } : {}),
      ...(core.fetch ? { fetch: core.fetch } : {}),
    });
}

export async function waitForResult(core: ClientCore, options: WaitForResultOptions): Promise<RentalState> {
  const { taskHash, waitMs, onProgress, pollMs = 500, watch = watchOf(core) } = options;
  const started = Date.now();
  let last: string | undefined;
  let watching: TaskWatch | undefined;
  try {
    for (;;) {
      let task: TaskView | undefined;
      try {
        task = await core.getTask(taskHash);
      } catch (error) {
        // Listed a moment ago and not indexed yet (or rate limited): asked again.
        if (!(error instanceof ApiError && error.retryable)) throw error;
      }
      const elapsedMs = Date.now() - started;
      const status = task?.state.status;
      if (onProgress && (status ?? "listing") !== last) onProgress({ taskHash, status: status ?? "listing", elapsedMs });
      last = status ?? "listing";
      const done = status !== undefined && RENTAL_DONE_STATUSES.includes(status);
      const result = task?.state.resultData;
      // A judged round shows its status a moment before the service records its verdict (its `task.verdict` event).
      const verdictPending = (status === "verified" || status === "failed") && !result?.verificationResult;
      if ((done && !verdictPending) || elapsedMs >= waitMs) {
        return {
          taskHash: task?.meta.taskHash ?? taskHash,
          status: status ?? "open",
          done,
          ...(result?.output !== undefined ? { output: result.output } : {}),
          ...(result?.verificationResult ? { verificationResult: result.verificationResult } : {}),
        };
      }
      const left = waitMs - elapsedMs;
      if (!watching && task) {
        // Opened once the task's chain is known, then read once more: nothing between the read and the watch is missed.
        watching = await watch(task.meta.taskHash, task.meta.chain);
        continue;
      }
      if (watching?.live) await watching.next(Math.min(WATCH_FALLBACK_MS, left));
      else await sleep(Math.min(pollMs, left));
    }
  } finally {
    watching?.close();
  }
}

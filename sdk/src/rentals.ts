/**
 * Renting a service (spec "Renting a service through the API"): a rental is an ordinary task of the service's price,
 * a one-hour deadline and automatic checks (`{ min_length: 20 }` and not a refusal), pinned to the service's agent
 * (`targetExecutor`) and linked with `serviceId`; a private prompt is wrapped to the agent's key only. `rentService`
 * (client.ts) and the MCP tool `rent_service` both post it through the posting engine with this row.
 */
import type { PostTaskInput } from "./posting";
import type { RoundVerdict, ServiceView } from "@market/core/api";
import type { TaskStatus } from "@market/core/status";
import { RENTAL_CRITERIA } from "@market/core/verification/criteria";
import { RENTAL_DURATION_SECONDS } from "@market/core/limits";

export interface RentServiceOptions {
  serviceId: number;
  /** What you ask of the service: the rental's brief. */
  prompt: string;
  /** Default `private`: the prompt is encrypted to the service's agent only. */
  privacy?: "public" | "private";
  /** How long to wait for the result (default 45 s); then the task hash and its status come back to poll. */
  waitSeconds?: number;
  /** Each status seen while waiting (a progress line). */
  onProgress?: (progress: RentalProgress) => void;
}

export interface RentalProgress {
  taskHash: string;
  status: TaskStatus | "listing";
  elapsedMs: number;
}

/** Where a rental stands when the wait ends. */
export interface RentalState {
  taskHash: string;
  status: TaskStatus;
  /** True once the rental is judged or over (`verified`, `completed`, `failed`, `refunded`, `cancelled`, `expired`); false when the wait ran out first. */
  done: boolean;
  /** The delivered result (to the poster), once delivered. */
  output?: string;
  verificationResult?: RoundVerdict;
}

export interface Rental extends RentalState {
  serviceId: number;
  /** The escrow paid: the service's price when rented. */
  amountRaw: string;
  /** The funding transaction. */
  txHash: string;
}

/**
 * Statuses a rental does not leave by itself: judged (hosted agents never deliver a failed rental again) or over. From
 * `failed` the poster claims the escrow back after the deadline and the 3-day appeal window; from `expired` (never
 * taken, deadline passed) it cancels.
 */
export const RENTAL_DONE_STATUSES: readonly TaskStatus[] = ["verified", "completed", "failed", "refunded", "cancelled", "expired"];

/** The posting row of one rental of `service`. */
export function rentalInput(
  service: Pick<ServiceView, "id" | "agent_address" | "price_raw">,
  prompt: string,
  privacy: "public" | "private" = "private",
): PostTaskInput {
  return {
    instructions: prompt,
    amountRaw: service.price_raw,
    privacy,
    durationSeconds: RENTAL_DURATION_SECONDS,
    verificationMode: "auto",
    verificationCriteria: { ...RENTAL_CRITERIA },
    targetExecutor: service.agent_address,
    serviceId: service.id,
  };
}

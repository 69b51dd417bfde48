import { MarketError } from "@market/core/errors";
import { EscrowStatus, sameAddress, type EscrowRefusal, type TaskSnapshot } from "@market/core/escrow";
import type { TaskStatus } from "@market/core/status";
import type { SettlementAction } from "@market/core/api";

/** The API actions answered from an escrow precondition (core/escrow), named as the routes name them. */
export type EscrowAction = SettlementAction | "deliver";

const DOING: Record<SettlementAction, string> = {
  cancel: "Cancelling",
  "claim-timeout": "Claiming",
  dispute: "Disputing",
  release: "Releasing",
  "release-unjudged": "Releasing unjudged work",
};

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/**
 * The API's answer to the escrow's refusal of an action: the one place that maps the contract's custom errors to the
 * codes of core/errors.ts. `status` is the task's API status, which `WRONG_STATE` names as its `reason`.
 */
export function refusalError(
  action: EscrowAction,
  refusal: EscrowRefusal,
  context: { task: TaskSnapshot; caller: string; status: TaskStatus },
): MarketError {
  const { task, status } = context;
  switch (refusal.error) {
    case "EscrowPaused":
      return new MarketError("ESCROW_PAUSED");
    case "TaskNotFound":
      return new MarketError("TASK_NOT_FOUND");
    case "NotPoster":
      return new MarketError("NOT_POSTER");
    case "NotWorker":
      return new MarketError("NOT_WORKER");
    case "NotTaskParty":
      return new MarketError("NOT_TASK_PARTY", "Only the poster or the worker can dispute.");
    case "NotTaskVerifier":
      return new MarketError("NOT_VERIFIER");
    case "InvalidStatus":
      return action === "deliver"
        ? new MarketError("WRONG_STATE", `The task is ${status}; results are delivered while it is assigned or after a failed round.`, {
            reason: status,
          })
        : new MarketError("WRONG_STATE", `${DOING[action]} is not possible while the task is ${status}.`, { reason: status });
    case "DeadlinePassed":
      if (action !== "dispute") return new MarketError("DEADLINE_PASSED");
      return new MarketError(
        "DEADLINE_PASSED",
        sameAddress(context.caller, task.poster) ? "The poster disputes before the deadline." : "The deadline and the appeal window have passed.",
      );
    case "AppealWindowClosed":
      return new MarketError("DEADLINE_PASSED", "The deadline and the appeal window have passed.");
    case "NoRoundsLeft":
      return new MarketError("NO_ATTEMPTS_LEFT");
    case "DeadlineNotReached":
      return new MarketError("DEADLINE_NOT_REACHED", `Claims open at the deadline, ${iso(refusal.args.deadline)}.`);
    case "WindowStillOpen": {
      const opensAt = iso(refusal.args.opensAt);
      if (action === "release-unjudged") {
        return new MarketError("DEADLINE_NOT_REACHED", `Escalated work is released from ${opensAt} unless the admin rules first.`);
      }
      return task.status === EscrowStatus.Failed
        ? new MarketError("APPEAL_WINDOW_OPEN", `The worker may appeal the failed verdict until ${opensAt}.`)
        : new MarketError("DISPUTE_PENDING", `The admin rules; without a ruling, claim from ${opensAt}.`);
    }
    case "InvalidWorker":
    case "ZeroResultHash":
    case "InvalidScore":
    case "NotMarketplaceVerifier":
    case "NotAdmin":
      // Calls the API builds itself (assignments, verdicts, result hashes) never meet these from a user's action.
      return new MarketError("WRONG_STATE", `The escrow would refuse this: ${refusal.error}.`, { reason: status });
  }
}

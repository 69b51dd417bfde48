/** The client's judging and settling area: a verdict, a cancel or refund, and the poster's or worker's settlement calls. */
import { ApiError, clientError } from "../errors";
import { escrowInterface } from "../chain";
import { canCancel, hasEnded, snapshotFromView } from "@market/core/escrow";
import type { SettlementAction, SettlementOutcome, SettlementTx, TaskView, VerdictAnswer } from "@market/core/api";
import { TaskEscrow__factory } from "../../../typechain-types/factories/contracts/TaskEscrow__factory";
import { sleep, type ClientCore } from "./core";

/**
 * The settlement calls a poster or worker signs: `cancel`, `claim-timeout`, `dispute`, `release` or `release-unjudged`
 * (core/api `SettlementAction`, the names of their routes).
 */
export type SettleAction = SettlementAction;

/** A settlement call sent: which call, what it does (`refund`, `escalate`, `dispute`, `payout`, `reopen`) and its transaction. */
export interface Settled {
  action: SettleAction;
  outcome: SettlementOutcome;
  txHash: string;
}

export interface Verdict {
  taskHash: string;
  approve: boolean;
  score?: number;
  reasons?: string[];
}

export async function reviewResult(core: ClientCore, verdict: Verdict): Promise<Pick<VerdictAnswer, "status" | "txHash">> {
  const { taskHash } = verdict;
  const body = {
    passed: verdict.approve,
    ...(verdict.score !== undefined ? { score: verdict.score } : {}),
    ...(verdict.reasons ? { reasons: verdict.reasons } : {}),
  };
  const answer = await core.http.post<VerdictAnswer>(`/api/v1/a2a/tasks/${taskHash}/verdict`, body);
  if (!answer.unsignedTx) return { status: await settledStatus(core, taskHash, answer.status), ...(answer.txHash ? { txHash: answer.txHash } : {}) };
  const task = await core.taskToSign(taskHash);
  const wallet = await core.wallet(task.meta.chain);
  const score = verdict.score ?? (verdict.approve ? 100 : 0);
  const expected = {
    to: wallet.escrow,
    data: escrowInterface.encodeFunctionData("completeVerification", [task.meta.taskHash, verdict.approve, score]),
  };
  const receipt = await wallet.send(answer.unsignedTx, expected);
  const recorded = await core.retrying(() =>
    core.http.post<VerdictAnswer>(`/api/v1/a2a/tasks/${taskHash}/verdict`, { ...body, score, txHash: receipt.hash }),
  );
  return { status: await settledStatus(core, taskHash, recorded.status), txHash: receipt.hash };
}

/** The task's status once a verdict's settlement shows (asked again while it still reads as awaiting one, up to a minute). */
async function settledStatus(core: ClientCore, taskHash: string, status: TaskView["state"]["status"]): Promise<TaskView["state"]["status"]> {
  for (let attempt = 0; (status === "awaiting_verification" || status === "submitted") && attempt < 120; attempt++) {
    await sleep(500);
    status = (await core.getTask(taskHash)).state.status;
  }
  return status;
}

export async function cancelAndRefund(core: ClientCore, taskHash: string): Promise<Settled> {
  let task: TaskView;
  try {
    task = await core.getTask(taskHash);
  } catch (error) {
    // Funded but never listed (a run stopped before listing): the service does not know it; the escrow does.
    if (error instanceof ApiError && error.code === "TASK_NOT_FOUND") return refundUnlisted(core, taskHash);
    throw error;
  }
  const status = task.state.status;
  // A task already over (a second `market cancel`): say so instead of the claim precondition's refusal.
  if (status === "cancelled" || status === "refunded" || status === "completed") {
    const what = status === "completed" ? "was paid to its worker" : `is ${status} already: its reward went back to the poster`;
    throw clientError("WRONG_STATE", `Task ${taskHash} ${what}; nothing is left in the escrow to refund.`, { reason: status });
  }
  return sendSettlement(core, taskHash, status === "open" ? "cancel" : "claim-timeout", task);
}

/** Cancels (while Funded) or claims (after the deadline) a task the service never listed, straight on the escrow. */
async function refundUnlisted(core: ClientCore, taskHash: string): Promise<Settled> {
  const wallet = await core.wallet();
  const escrow = TaskEscrow__factory.connect(wallet.escrow, wallet.provider);
  const task = snapshotFromView(taskHash, await escrow.getTask(taskHash));
  if (!task) throw clientError("TASK_NOT_FOUND", `No task ${taskHash} is listed, nor funded on the ${wallet.chain} escrow.`);
  if (task.poster !== wallet.wallet.address) {
    throw clientError("NOT_POSTER", `Task ${taskHash} was not funded by this wallet on ${wallet.chain}.`);
  }
  if (hasEnded(task.status)) throw clientError("WRONG_STATE", `Task ${taskHash} has ended on chain; nothing is left in the escrow.`);
  // Cancelled while the escrow takes a cancel (Funded, past its deadline too), else claimed. A paused escrow refuses
  // either; the transaction's revert says so.
  const open = canCancel(task, { taskHash, caller: wallet.wallet.address, paused: false }).ok;
  const data = open ? escrowInterface.encodeFunctionData("cancelTask", [taskHash]) : escrowInterface.encodeFunctionData("claimTimeout", [taskHash]);
  const receipt = await wallet.send(null, { to: wallet.escrow, data });
  return { action: open ? "cancel" : "claim-timeout", outcome: "refund", txHash: receipt.hash };
}

const ESCROW_FUNCTION = {
  cancel: "cancelTask",
  "claim-timeout": "claimTimeout",
  dispute: "raiseDispute",
  release: "releaseTask",
  "release-unjudged": "releaseUnjudgedWork",
} as const satisfies Record<SettleAction, string>;

export async function sendSettlement(core: ClientCore, taskHash: string, action: SettleAction, known?: TaskView): Promise<Settled> {
  const task = await core.taskToSign(taskHash, known);
  const wallet = await core.wallet(task.meta.chain);
  const answer = await core.http.post<SettlementTx>(`/api/v1/a2a/tasks/${taskHash}/${action}`);
  const expected = { to: wallet.escrow, data: escrowInterface.encodeFunctionData(ESCROW_FUNCTION[action] as "cancelTask", [task.meta.taskHash]) };
  const receipt = await wallet.send(answer.unsignedTx, expected);
  return { action, outcome: answer.outcome, txHash: receipt.hash };
}

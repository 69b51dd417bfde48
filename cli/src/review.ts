/**
 * `market review`: without a verdict flag, shows the latest delivered result of a task (to its poster, worker or
 * verifier); with `--approve` or `--reject`, the poster's verdict on it (`manual`), or the verifier agent's (`agent`).
 */
import { MarketClient } from "../../sdk/src/client";
import { clientError } from "../../sdk/src/errors";
import { clientOptions, type CliConfig } from "./config";
import { requireTaskHash } from "./task-hash";
import type { Terminal } from "./terminal";

export interface ReviewFlags {
  approve?: boolean;
  reject?: boolean;
  reason?: string[];
  score?: number;
}

export async function reviewCommand(taskHash: string, flags: ReviewFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  requireTaskHash(taskHash);
  if (flags.approve && flags.reject) throw clientError("VALIDATION_FAILED", "give at most one of --approve and --reject");
  // The key only signs for an `agent` task's verifier; a poster's manual verdict is settled by the service.
  const client = new MarketClient(clientOptions(config, { signs: false }));
  if (!flags.approve && !flags.reject) return showResult(client, taskHash, terminal);
  const approve = flags.approve === true;
  const verdict = await client.reviewResult({
    taskHash,
    approve,
    ...(flags.score !== undefined ? { score: flags.score } : {}),
    ...(flags.reason?.length ? { reasons: flags.reason } : {}),
  });
  // The SDK answers once the settlement shows: the status after the verdict (verified, failed...).
  terminal.data({ taskHash, approved: approve, ...verdict });
  terminal.say(`${approve ? "approved" : "rejected"} ${taskHash}`);
  terminal.say(`status: ${verdict.status}`);
  if (verdict.txHash) terminal.say(`tx: ${verdict.txHash}`);
  return 0;
}

/** The task's state and its latest delivered output, as the service shows it to this key. */
async function showResult(client: MarketClient, taskHash: string, terminal: Terminal): Promise<number> {
  const task = await client.getTask(taskHash);
  terminal.data(task);
  const { meta, state } = task;
  terminal.say(`task: ${taskHash} (${meta.verificationMode})`);
  terminal.say(`status: ${state.status}, rounds used: ${state.rounds} of 3`);
  const result = state.resultData;
  if (result?.output === undefined) {
    terminal.say(
      result?.resultHash
        ? `result hash: ${result.resultHash} (the output is shown to the poster, worker and verifier only)`
        : "no result delivered yet",
    );
    return 0;
  }
  const verdict = result.verificationResult;
  if (verdict) {
    const score = verdict.score === null ? "" : `, score ${verdict.score}`;
    terminal.say(`verdict: ${verdict.passed ? "passed" : "failed"}${score}${verdict.reasons.length > 0 ? ` (${verdict.reasons.join("; ")})` : ""}`);
  }
  terminal.say("output:");
  terminal.say(result.output);
  if (state.status === "awaiting_verification") terminal.say(`judge it with: market review ${taskHash} --approve | --reject --reason <text>`);
  return 0;
}

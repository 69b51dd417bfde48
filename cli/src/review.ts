/** `market review`: the poster's verdict on the latest delivered round of a `manual` task. */
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
  if (flags.approve === flags.reject) throw clientError("VALIDATION_FAILED", "give exactly one of --approve and --reject");
  const approve = flags.approve === true;
  // The key only signs for an `agent` task's verifier; a poster's manual verdict is settled by the service.
  const client = new MarketClient(clientOptions(config, { signs: false }));
  const verdict = await client.reviewResult(taskHash, {
    approve,
    ...(flags.score !== undefined ? { score: flags.score } : {}),
    ...(flags.reason?.length ? { reasons: flags.reason } : {}),
  });
  terminal.say(`${approve ? "approved" : "rejected"} ${taskHash}`);
  terminal.say(`status: ${verdict.status}`);
  if (verdict.txHash) terminal.say(`tx: ${verdict.txHash}`);
  return 0;
}

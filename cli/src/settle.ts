/**
 * The settlement commands a poster or a worker signs with its own wallet: `market cancel` (the poster's escrow back:
 * cancel an open task, or claim after the deadline), `market dispute` (poster or worker) and `market release` (the
 * worker hands an undelivered task back).
 */
import { MarketClient, type Settled, type SettleAction } from "../../sdk/src/client";
import { clientOptions, type CliConfig } from "./config";
import { requireTaskHash } from "./task-hash";
import type { Terminal } from "./terminal";

/** What each call did, in words (the task's status afterwards: `cancelled`, `refunded`, `escalated`, `disputed`, `open`). */
function described({ action, outcome }: Pick<Settled, "action" | "outcome">): string {
  if (action === "cancel") return "cancelled: the whole reward went back to your wallet";
  if (action === "claim-timeout") {
    return outcome === "escalate"
      ? "escalated: the delivered result nobody judged goes to a ruling (the worker may collect it after 14 days)"
      : "claimed after the deadline: the whole reward went back to your wallet";
  }
  if (action === "dispute") return "disputed: the escrow waits for the admin's ruling";
  if (action === "release") return "released: the task is open again for other agents";
  return outcome;
}

async function settleCommand(
  taskHash: string,
  config: CliConfig,
  terminal: Terminal,
  send: (client: MarketClient) => Promise<Settled>,
): Promise<number> {
  requireTaskHash(taskHash);
  const client = new MarketClient(clientOptions(config, { signs: true }));
  const settled = await send(client);
  terminal.data({ taskHash, ...settled });
  terminal.say(`${taskHash}: ${described(settled)}`);
  terminal.say(`tx: ${settled.txHash}`);
  return 0;
}

/** `market cancel`: cancels an open task, or claims after its deadline (the poster's). */
export function cancelCommand(taskHash: string, config: CliConfig, terminal: Terminal): Promise<number> {
  return settleCommand(taskHash, config, terminal, (client) => client.cancelAndRefund(taskHash));
}

/** `market dispute` and `market release`: one settlement call of the poster or the worker. */
export function actionCommand(
  action: Extract<SettleAction, "dispute" | "release">,
  taskHash: string,
  config: CliConfig,
  terminal: Terminal,
): Promise<number> {
  return settleCommand(taskHash, config, terminal, (client) => client.settle({ taskHash, action }));
}

/** `market cancel`: the escrow back to the poster: cancels an open task, or claims after its deadline. */
import { MarketClient } from "../../sdk/src/client";
import { clientOptions, type CliConfig } from "./config";
import { requireTaskHash } from "./task-hash";
import type { Terminal } from "./terminal";

export async function cancelCommand(taskHash: string, config: CliConfig, terminal: Terminal): Promise<number> {
  requireTaskHash(taskHash);
  const client = new MarketClient(clientOptions(config, { signs: true }));
  const { outcome, txHash } = await client.cancelAndRefund(taskHash);
  terminal.say(`${taskHash}: ${outcome}`);
  terminal.say(`tx: ${txHash}`);
  return 0;
}

/**
 * `market services`: the active services of hosted agents (fixed-price calls to rent). `market rent`: rents one (a
 * task at its price, pinned to its agent, the prompt encrypted to that agent unless `--public`), paid from the API
 * key's wallet after one confirmation, then waits for the result with a status line.
 */
import { readFileSync } from "node:fs";
import { MarketClient } from "../../sdk/src/client";
import { clientError } from "../../sdk/src/errors";
import { formatUsdc } from "@market/core/money";
import { clientOptions, publicClientOptions, type CliConfig } from "./config";
import type { Terminal } from "./terminal";

export interface ServicesFlags {
  agent?: string;
  limit?: number;
}

export async function servicesCommand(flags: ServicesFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  const client = new MarketClient(publicClientOptions(config));
  const { services, total } = await client.browseServices({
    ...(flags.agent ? { agent: flags.agent } : {}),
    ...(flags.limit ? { limit: flags.limit } : {}),
  });
  terminal.data({ services, total });
  if (services.length === 0) {
    terminal.say("no active services");
    return 0;
  }
  for (const s of services) {
    terminal.say(
      `${s.id}\t${formatUsdc(BigInt(s.price_raw))} USDC\t${s.name}\t${s.agent_name} ${s.agent_address}\tsold ${s.sold_count}\t${s.service_type}`,
    );
    if (s.description) terminal.say(`\t${s.description.replace(/\s*\n\s*/g, " ")}`);
  }
  terminal.say(`${services.length} of ${total} active service(s); rent one with: market rent <id> --prompt "..."`);
  return 0;
}

export interface RentFlags {
  prompt?: string;
  promptFile?: string;
  public?: boolean;
  /** Seconds. */
  wait: number;
  yes?: boolean;
}

export async function rentCommand(serviceIdText: string, flags: RentFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  if (!/^[0-9]{1,10}$/.test(serviceIdText) || Number(serviceIdText) < 1) {
    throw clientError("VALIDATION_FAILED", `serviceId must be a service's id (a whole number from 1), got ${serviceIdText}`);
  }
  const serviceId = Number(serviceIdText);
  if ((flags.prompt === undefined) === (flags.promptFile === undefined))
    throw clientError("VALIDATION_FAILED", "give exactly one of --prompt and --prompt-file");
  const prompt = flags.prompt ?? readPrompt(flags.promptFile!);
  if (prompt.trim() === "") throw clientError("VALIDATION_FAILED", "the prompt is empty");

  const client = new MarketClient(clientOptions(config, { signs: true }));
  const service = await client.getService(serviceId);
  const price = `${formatUsdc(BigInt(service.price_raw))} USDC`;
  terminal.say(`service ${service.id}: ${service.name} by ${service.agent_name} (${service.agent_address}), ${price} per call`);
  if (!service.active) throw clientError("SERVICE_NOT_ACTIVE", `Service ${serviceId} is deactivated and takes no new rentals; nothing was sent.`);
  if (!flags.yes) {
    if (!terminal.interactive) throw clientError("CONFIRMATION_REQUIRED", "No terminal to confirm on: pass --yes to rent. Nothing was sent.");
    const payer = await client.whoami();
    if (!(await terminal.confirm(`Pay ${price} into escrow from ${payer} to rent service ${serviceId}?`))) {
      throw clientError("CONFIRMATION_REQUIRED", "Not confirmed; nothing was sent.");
    }
  }

  const line = terminal.status();
  let rental;
  try {
    rental = await client.rentService({
      serviceId,
      prompt,
      privacy: flags.public ? "public" : "private",
      waitSeconds: flags.wait,
      onProgress: ({ taskHash, status, elapsedMs }) =>
        line.update(`rental ${taskHash.slice(0, 10)}…: ${status} (${Math.round(elapsedMs / 1000)} s of ${flags.wait} s)`),
    });
  } finally {
    line.end();
  }
  terminal.data(rental);
  terminal.say(`task: ${rental.taskHash}`);
  terminal.say(`paid: ${formatUsdc(BigInt(rental.amountRaw))} USDC (tx ${rental.txHash})`);
  terminal.say(`status: ${rental.status}`);
  const verdict = rental.verificationResult;
  if (verdict && !verdict.passed) terminal.say(`verdict: failed${verdict.reasons.length > 0 ? ` (${verdict.reasons.join("; ")})` : ""}`);
  if (rental.output !== undefined) {
    terminal.say("output:");
    terminal.say(rental.output);
  }
  if (!rental.done) {
    terminal.note(`still ${rental.status} after ${flags.wait} s: see it later with \`market review ${rental.taskHash}\``);
    return 0;
  }
  if (rental.status === "verified" || rental.status === "completed") return 0;
  if (rental.status === "failed") {
    terminal.note(`the result failed its checks: after the deadline and the 3-day appeal window, \`market cancel ${rental.taskHash}\` refunds it`);
  } else if (rental.status === "expired") {
    terminal.note(`never taken before its deadline: \`market cancel ${rental.taskHash}\` refunds it`);
  }
  return 1;
}

function readPrompt(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw clientError("VALIDATION_FAILED", `cannot read --prompt-file ${file}: ${(error as Error).message}`);
  }
}

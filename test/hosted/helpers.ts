/** Shared by the hosted-agent tests: the stack with a model server, owners, and the deploy body of a scripted agent. */
import hre from "hardhat";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { MarketClient } from "../../sdk/src/client";
import type { DeployAgentOptions } from "../../sdk/src/client";
import { startStack, type Stack } from "../support/stack";
import { startModelServer, type ModelServer } from "../support/model-server";

/** A stack and a scripted model server shared by a describe block's tests: started before them, closed after. */
export function sharedStackAndModel(use: (stack: Stack, model: ModelServer) => void): void {
  let started: { stack: Stack; model: ModelServer } | undefined;
  before(async function () {
    started = { stack: await startStack(), model: await startModelServer() };
    use(started.stack, started.model);
  });
  after(async function () {
    await started?.stack.close();
    await started?.model.close();
  });
}

/** Resolves when `check` holds, polling. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 30_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** An SDK client acting as `signer` (its API key and wallet). */
export async function clientOf(s: Stack, signer: HardhatEthersSigner): Promise<MarketClient> {
  return new MarketClient(await s.clientOptions(signer));
}

/** An SDK client acting as `signer`, and its API key (one key for both: tests also call the API with it). */
export async function keyedClientOf(s: Stack, signer: HardhatEthersSigner): Promise<{ client: MarketClient; key: string }> {
  const options = await s.clientOptions(signer);
  return { client: new MarketClient(options), key: options.apiKey };
}

/** Deploys a scripted agent for `owner`, sends its wallet gas (and `usdcRaw` of USDC when given), and starts it. */
export async function startedAgent(s: Stack, owner: HardhatEthersSigner, options: DeployAgentOptions, usdcRaw?: bigint) {
  const client = await clientOf(s, owner);
  const { agent } = await client.deployAgent(options);
  await fundGas(owner, agent.address);
  if (usdcRaw !== undefined) await (await s.usdc.connect(s.admin).mint(agent.address, usdcRaw)).wait();
  await client.startAgent({ agentId: agent.id });
  return { client, agent };
}

/** The deploy options of an agent on the scripted model (not started: tests fund its gas first). */
export function agentOptions(model: ModelServer, extra: Partial<DeployAgentOptions> = {}): DeployAgentOptions {
  return {
    displayName: "Scripted summariser",
    instructions: "Summarise what you are given in two sentences.",
    model: { baseUrl: model.baseUrl, name: "scripted-model" },
    capabilities: ["summarization"],
    start: false,
    ...extra,
  };
}

/** Native gas for a hosted agent's own transactions (its wallet starts empty). */
export async function fundGas(from: HardhatEthersSigner, address: string, wei = 10n ** 18n): Promise<void> {
  await (await from.sendTransaction({ to: address, value: wei })).wait();
}

/** A signer beyond the escrow fixture's eight. */
export async function extraSigner(index: number): Promise<HardhatEthersSigner> {
  const signers = await hre.ethers.getSigners();
  const signer = signers[index];
  if (!signer) throw new Error(`no signer ${index}`);
  return signer;
}

/** Status of a task as its poster sees it. */
export async function statusOf(s: Stack, key: string, taskHash: string): Promise<{ status: string; output?: string; worker?: string }> {
  const answer = await s.call<{ state: { status: string; worker?: string; resultData?: { output?: string } } }>("GET", `/api/v1/tasks/${taskHash}`, {
    key,
  });
  // Listed a moment ago and not indexed yet, or rate limited: no status yet.
  if (answer.status !== 200) return { status: `error:${answer.body.error.code}` };
  const state = answer.body.data.state;
  return {
    status: state.status,
    ...(state.resultData?.output === undefined ? {} : { output: state.resultData.output }),
    ...(state.worker ? { worker: state.worker } : {}),
  };
}

/** Rows of `deliveries` for a task (each round delivered). */
export async function deliveriesOf(s: Stack, taskHash: string) {
  return s.db.selectFrom("deliveries").selectAll().where("task_hash", "=", taskHash).execute();
}

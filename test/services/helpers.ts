/** Shared by the service tests: a stack whose hosted agent (on the scripted model server) sells one running service. */
import { stackFixture } from "../support/stack";
import type { TestServerOptions } from "../server/harness";
import type { ModelServer } from "../support/model-server";
import type { MarketClient, ServiceView } from "../../sdk/src/client";
import { fundGas, until } from "../hosted/helpers";

export const RENTAL_PRICE = 1_500_000n;

export interface ServiceSeed {
  agent: { id: number; address: string };
  service: ServiceView;
  /** The owner's (the stranger's) API key. */
  ownerKey: string;
}

/**
 * A stack (made once per suite, at module level) whose seed deploys a hosted agent on the model server `model()` names
 * (asked when the seed runs: start the server in `before`), funds its gas, lists its service at RENTAL_PRICE and leaves
 * it running, so each test's stack starts it; the worker is registered with `summarization`.
 */
export function serviceStackFixture(model: () => ModelServer, options: { minReward?: bigint; stack?: TestServerOptions } = {}) {
  return stackFixture(async (server): Promise<ServiceSeed> => {
    const ownerKey = await server.apiKeyFor(server.stranger);
    const agent = await server.deployHostedAgent(server.stranger, ownerKey, {
      displayName: "Contract reviewer",
      instructions: "Review the contract you are given and list its risks.",
      model: { baseUrl: model().baseUrl, name: "scripted-model" },
      capabilities: ["summarization"],
      ...(options.minReward !== undefined ? { minReward: options.minReward.toString() } : {}),
    });
    await fundGas(server.stranger, agent.address);
    const created = await server.call<{ service: ServiceView }>("POST", `/api/v1/agents/${agent.id}/services`, {
      key: ownerKey,
      body: { name: "Contract risk review", description: "Send a contract; get its risks.", priceRaw: RENTAL_PRICE.toString(), serviceType: "api" },
    });
    if (created.status !== 200) throw new Error(JSON.stringify(created.body));
    // Recorded as running: each test's stack starts it (its runner registers it then).
    await server.call("POST", `/api/v1/agents/${agent.id}/start`, { key: ownerKey });
    await server.registerAgent(server.worker, ["summarization"]);
    return { agent, service: created.body.data.service, ownerKey };
  }, options.stack);
}

/** Resolves once the service's agent has registered (its runner started): its key shows on the service. */
export async function untilAgentRegistered(client: MarketClient, serviceId: number): Promise<void> {
  await until(async () => (await client.getService(serviceId)).agent_public_key !== null, 30_000, "the agent registered");
}

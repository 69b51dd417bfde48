/**
 * Hosted agents (docs/hosted-agents.md): agents the service runs on the owner's model, with a wallet it generates
 * and custodies. `createHosting` builds the parts once; the composition root registers `hostedRoutes` and
 * `bridgeHealthRoutes` with them, and attaches the runners once the API listens.
 */
import type { Db } from "../db";
import type { ChainRegistry } from "../chains";
import { DEFAULT_SANDBOX, type HostedConfig } from "../config";
import { createSandbox, type Sandbox } from "../sandbox";
import type { AgentTokens } from "../auth";
import { createVault } from "./vault";
import { createHostedStore } from "./store";
import { createDeployFees } from "./fees";
import { createGasSponsor } from "./sponsor";
import { createHostedRunners, type RunnerEndpoints } from "./runner";
import { createHostedAgents, type OnDeployed } from "./service";
import type { RunnerLogger } from "./runner/agent";
import { createSkillStore } from "../skills";
import { checkToolDefinition } from "./tools";

export { hostedRoutes, HOSTED_PREFIX, type HostedRoutesDeps } from "./routes";
export { bridgeHealthRoutes } from "./health";
export type { HostedAgents, OnDeployed, DeployedAgent } from "./service";
export type { GasSponsor } from "./sponsor";
export type { RunnerEndpoints } from "./runner";
export type { RunnerLogger } from "./runner/agent";

export type Hosting = ReturnType<typeof createHosting>;

export interface HostingDeps {
  db: Db;
  chains: ChainRegistry;
  config: HostedConfig;
  /** The tokens running agents act with (auth's `agentTokens`). */
  tokens: Pick<AgentTokens, "issue" | "revoke">;
  now: () => number;
  logger: RunnerLogger;
  /** Runs once per new agent, after its record is committed and before it starts (the identity mint goes here). */
  onDeployed?: OnDeployed;
  /** The sandbox of JS Eval and Sandbox tools; built from `config.sandbox` when absent. */
  sandbox?: Sandbox;
}

/** Runs every hook handed to `onDeployed` in turn (a hook's failure is recorded by the deploy and stops the rest). */
function deployHooks(first: OnDeployed | undefined) {
  const hooks: OnDeployed[] = first ? [first] : [];
  return {
    add: (hook: OnDeployed) => void hooks.push(hook),
    run: async (agent: Parameters<OnDeployed>[0]) => {
      for (const hook of hooks) await hook(agent);
    },
  };
}

export function createHosting(deps: HostingDeps) {
  const { db, chains, config, tokens, now, logger } = deps;
  const vault = config.masterKey ? createVault(config.masterKey) : undefined;
  const store = createHostedStore({ db, vault, now, holdLapseMs: config.walletHoldMs, eventChain: () => chains.posting().config.name });
  const settlementChain = () => chains.posting();
  const fees = createDeployFees({ db, chain: settlementChain, amount: config.deployFeeRaw, now });
  const sponsor = createGasSponsor({ db, chains, mode: config.gasSponsor, privateKey: config.gasSponsorKey, now, logger });
  const hooks = deployHooks(deps.onDeployed);
  // The skills registry checks its tools by the same rules as a deploy (issue 25).
  const skills = createSkillStore({ db, now, checkTool: (tool, field) => checkToolDefinition(tool, field, config.allowPrivateNetworks) });
  const sandbox = deps.sandbox ?? createSandbox({ db, config: config.sandbox ?? DEFAULT_SANDBOX, now });
  const runners = createHostedRunners({ db, store, tokens, config, sponsor, logger, now, sandbox });
  const agents = createHostedAgents({
    db,
    store,
    fees,
    runners,
    skills,
    settlementChain,
    config,
    now,
    onDeployed: hooks.run,
    sandbox,
  });
  /** Where the service signs for agents' wallets: the chains' RPCs and escrows, or the endpoints runners are attached to. */
  let signing: Omit<RunnerEndpoints, "apiUrl"> = {
    rpcUrls: Object.fromEntries(chains.list().map((c) => [c.name, c.config.rpcUrl])),
    escrows: Object.fromEntries(chains.list().map((c) => [c.name, c.config.escrow])),
  };
  return {
    store,
    skills,
    sponsor,
    runners,
    agents,
    sandbox,
    /** The RPCs and pinned escrows a custodied wallet signs through outside its run (an owner's MCP spend). */
    signing: () => signing,
    /** Adds what a deploy hands a new agent to (the composition root adds the identity mint). */
    onDeployed: hooks.add,
    /** Starts every agent recorded as running, against the API at `endpoints.apiUrl`. */
    attach: (endpoints: RunnerEndpoints) => {
      signing = { rpcUrls: endpoints.rpcUrls, escrows: endpoints.escrows };
      return runners.attach(endpoints);
    },
    /** Starts and stops runs to match the states recorded (by any API process) since. */
    reconcile: () => runners.reconcile(),
    close: () => runners.close(),
  };
}

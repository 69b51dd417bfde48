/** The client's hosted-agents area: the deploy fee, deploy, lifecycle, the agent's key and funds, and its messages. */
import { clientError } from "../errors";
import { erc20Interface } from "../chain";
import { openSealed, publicKeyFromPrivateKey } from "@market/core/crypto";
import type {
  AgentMessage,
  DeployAgentBody,
  Deployed,
  DeployFeeTerms,
  ExportedKey,
  HostedAgentView,
  OwnedAgentView,
  Withdrawal,
} from "@market/core/api";
import type { ClientCore } from "./core";

/** `deployAgent`'s parameters: the deploy body, with the owner key and the fee payment filled in when left out. */
export type DeployAgentOptions = Omit<DeployAgentBody, "ownerPublicKey" | "minReward" | "subtasks" | "feeTxHash"> & {
  /** Default: the public key of this client's executor key (the owner opens exported secrets with it). */
  ownerPublicKey?: string;
  /** Raw units. */
  minReward?: bigint | string;
  /** The sub-task payment option (`delegate_to_agent`); `maxRewardRaw` in raw units. */
  subtasks?: { enabled: boolean; maxRewardRaw?: bigint | string };
  /** The deploy fee's payment, when paid beforehand. */
  feeTxHash?: string;
  /** Pay the deploy fee from this client's wallet when the service asks one and no `feeTxHash` is given (default true). */
  payFee?: boolean;
};

/** Opens an exported hosted-agent key (`encryptedPrivateKey`) with the owner's private key, locally: 0x-hex. */
export function decryptExportedKey(encryptedPrivateKey: string, ownerPrivateKey: string): string {
  return `0x${Buffer.from(openSealed(encryptedPrivateKey, ownerPrivateKey)).toString("utf8").replace(/^0x/, "")}`;
}

export async function deployFee(core: ClientCore): Promise<DeployFeeTerms> {
  return core.http.get("/api/v1/agents/deploy-fee");
}

/**
 * Pays the deploy fee from this client's wallet (a settlement-token transfer to the treasury) when the service asks
 * one: the transaction's hash, for `deployAgent`'s `feeTxHash`; null when deploying is free. A deploy refused after
 * the payment can be sent again with the same hash (the fee is credited once, to the deploy that succeeds).
 */
export async function payDeployFee(core: ClientCore): Promise<string | null> {
  const terms = await deployFee(core);
  if (!terms.required) return null;
  const wallet = await core.wallet(terms.chain);
  const data = erc20Interface.encodeFunctionData("transfer", [terms.recipient, BigInt(terms.amount)]);
  return (await wallet.send(null, { to: terms.token, data })).hash;
}

export async function deployAgent(core: ClientCore, options: DeployAgentOptions): Promise<Deployed> {
  const { payFee, ownerPublicKey, ...rest } = options;
  const executorKey = core.executorKey;
  const ownerKey = ownerPublicKey ?? (executorKey ? publicKeyFromPrivateKey(executorKey) : undefined);
  if (!ownerKey) throw clientError("INVALID_PUBLIC_KEY", "deployAgent needs ownerPublicKey (or an executor key to take it from).");
  let feeTxHash = rest.feeTxHash;
  if (feeTxHash === undefined && payFee !== false) feeTxHash = (await payDeployFee(core)) ?? undefined;
  const { minReward, subtasks, ...fields } = rest;
  return core.http.post("/api/v1/agents", {
    ...fields,
    ownerPublicKey: ownerKey,
    ...(minReward === undefined ? {} : { minReward: minReward.toString() }),
    ...(subtasks
      ? {
          subtasks: {
            enabled: subtasks.enabled,
            ...(subtasks.maxRewardRaw === undefined ? {} : { maxRewardRaw: subtasks.maxRewardRaw.toString() }),
          },
        }
      : {}),
    ...(feeTxHash ? { feeTxHash } : {}),
  });
}

export async function hostedAgents(core: ClientCore): Promise<{ agents: HostedAgentView[]; total: number }> {
  return core.http.get("/api/v1/agents");
}

export async function myAgents(core: ClientCore): Promise<{ agents: OwnedAgentView[] }> {
  return core.http.get("/api/v1/agents/mine");
}

/** `start`, `stop` or `restart`: the agent as it is after the call. */
export async function agentLifecycle(core: ClientCore, agentId: number, action: "start" | "stop" | "restart"): Promise<OwnedAgentView> {
  return (await core.http.post<{ agent: OwnedAgentView }>(`/api/v1/agents/${agentId}/${action}`)).agent;
}

export async function deleteAgent(core: ClientCore, agentId: number): Promise<{ id: number; deleted: true }> {
  return core.http.del(`/api/v1/agents/${agentId}`);
}

export async function exportAgentKey(
  core: ClientCore,
  { agentId, ownerPrivateKey }: { agentId: number; ownerPrivateKey?: string },
): Promise<ExportedKey & { privateKey?: string }> {
  const exported = await core.http.post<ExportedKey>(`/api/v1/agents/${agentId}/export-key`);
  const key = ownerPrivateKey ?? core.executorKey;
  if (!key || publicKeyFromPrivateKey(key) !== exported.ownerPublicKey.replace(/^0x/, "").toLowerCase()) return exported;
  return { ...exported, privateKey: decryptExportedKey(exported.encryptedPrivateKey, key) };
}

export async function withdrawFromAgent(
  core: ClientCore,
  { agentId, amountRaw }: { agentId: number; amountRaw?: bigint | string },
): Promise<Withdrawal> {
  return core.http.post(`/api/v1/agents/${agentId}/withdraw`, amountRaw === undefined ? {} : { amountRaw: amountRaw.toString() });
}

export async function sendAgentMessage(core: ClientCore, { agentId, body }: { agentId: number; body: string }): Promise<AgentMessage> {
  return core.http.post(`/api/v1/agents/${agentId}/messages`, { body });
}

export async function agentMessages(core: ClientCore, agentId: number): Promise<{ messages: AgentMessage[] }> {
  return core.http.get(`/api/v1/agents/${agentId}/messages`);
}

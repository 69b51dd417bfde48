/** The client's agent area: register as an agent, find tasks, take one, open its brief, deliver and finalize. */
import { Wallet } from "ethers";
import { clientError } from "../errors";
import { escrowInterface } from "../chain";
import { decryptBrief, privateTaskHash, publicKeyFromPrivateKey, resultHash, unwrapBriefKey } from "@market/core/crypto";
import type { ChainName } from "@market/core/chains";
import type {
  AgentAnswer,
  AgentProfile,
  Assigned,
  AssignedTasksAnswer,
  BidAnswer,
  BlobData,
  BrowseAnswer,
  Delivered,
  Finalized,
  PostedAnswer,
} from "@market/core/api";
import type { ClientCore } from "./core";

/** What `accept` answers: the brief (or how to open it) and how the result is judged. */
export type AssignedTask = Assigned;

export interface CreateAgentOptions {
  /** The API key wallet's private key. Without it a random key is generated and returned once; that agent can open briefs but cannot sign evidence. */
  privateKey?: string;
  supportedChains: ChainName[];
  capabilities?: string[];
  displayName?: string;
  /** Raw units. */
  minReward?: bigint | string;
}

export async function createAgent(core: ClientCore, options: CreateAgentOptions): Promise<{ profile: AgentProfile; privateKey?: string }> {
  let generated: string | undefined;
  let privateKey = options.privateKey;
  if (privateKey) await core.requireOwnKey(privateKey);
  else privateKey = generated = Wallet.createRandom().privateKey;
  const { profile } = await core.http.post<AgentAnswer>("/api/v1/a2a/register", {
    publicKey: publicKeyFromPrivateKey(privateKey),
    supportedChains: options.supportedChains,
    capabilities: options.capabilities ?? [],
    ...(options.displayName ? { displayName: options.displayName } : {}),
    ...(options.minReward !== undefined ? { minReward: options.minReward.toString() } : {}),
  });
  return generated ? { profile, privateKey: generated } : { profile };
}

export async function browseA2ATasks(core: ClientCore, filter: { capabilities?: string[] }): Promise<BrowseAnswer> {
  const caps = filter.capabilities?.length ? `?capabilities=${encodeURIComponent(filter.capabilities.join(","))}` : "";
  return core.http.get(`/api/v1/a2a/tasks${caps}`);
}

export async function postedTasks(core: ClientCore, options: { limit?: number; cursor?: string }): Promise<PostedAnswer> {
  const query = new URLSearchParams();
  if (options.limit) query.set("limit", String(options.limit));
  if (options.cursor) query.set("cursor", options.cursor);
  return core.http.get(`/api/v1/a2a/tasks/posted${query.size ? `?${query}` : ""}`);
}

export async function assignedTasks(core: ClientCore): Promise<AssignedTasksAnswer> {
  return core.http.get("/api/v1/a2a/tasks/assigned");
}

export async function acceptTask(core: ClientCore, taskHash: string): Promise<AssignedTask> {
  return core.http.post(`/api/v1/a2a/tasks/${taskHash}/accept`);
}

export async function bidOnTask(core: ClientCore, { taskHash, message }: { taskHash: string; message?: string }): Promise<BidAnswer> {
  return core.http.post(`/api/v1/a2a/tasks/${taskHash}/bid`, message ? { message } : {});
}

export async function openBrief(core: ClientCore, task: AssignedTask): Promise<string> {
  if (task.brief.privacy === "public") return task.brief.publicBrief ?? "";
  const privateKey = core.executorKey;
  if (!privateKey || !task.brief.wrappedKey || !task.brief.rootHash) throw clientError("NEEDS_WRAP", "No key to open this private brief.");
  const { data } = await core.http.get<BlobData>(`/api/v1/storage/${task.brief.rootHash}`);
  const ciphertext = Buffer.from(data, "base64");
  // The brief the poster funded is the one whose SHA-256 is the task hash: anything else is not opened.
  const downloaded = privateTaskHash(ciphertext);
  if (downloaded !== task.taskHash.toLowerCase()) {
    throw clientError(
      "BRIEF_MISMATCH",
      `The brief downloaded for task ${task.taskHash} is not the one it was funded for (its SHA-256 is ${downloaded}).`,
    );
  }
  return decryptBrief(ciphertext, unwrapBriefKey(task.brief.wrappedKey, privateKey));
}

export async function deliverResult(
  core: ClientCore,
  first: string | { taskHash: string; output: string },
  result?: string | { output: string },
): Promise<Finalized> {
  const { taskHash, output } = typeof first === "string" ? { taskHash: first, output: typeof result === "string" ? result : result?.output } : first;
  if (typeof output !== "string") throw clientError("VALIDATION_FAILED", "deliverResult(taskId, result): result is the output text, or { output }.");
  const task = await core.taskToSign(taskHash);
  const wallet = await core.wallet(task.meta.chain);
  const delivered = await core.http.post<Delivered>(`/api/v1/a2a/tasks/${taskHash}/deliver`, { output });
  const expected = { to: wallet.escrow, data: escrowInterface.encodeFunctionData("submitEvidence", [task.meta.taskHash, resultHash(output)]) };
  const receipt = await wallet.send(delivered.unsignedTx, expected);
  return finalize(core, { taskHash, txHash: receipt.hash });
}

export async function finalize(core: ClientCore, { taskHash, txHash }: { taskHash: string; txHash?: string }): Promise<Finalized> {
  return core.retrying(() => core.http.post<Finalized>(`/api/v1/a2a/tasks/${taskHash}/finalize`, txHash ? { txHash } : {}));
}

/**
 * Preparing rows to fund, which pays nothing: the agents that may open each private brief (one lookup per capability
 * set), and per row its task hash and, for a private brief, the ciphertext uploaded and the key wrapped to each of them.
 */
import { ApiError, clientError } from "../errors";
import { MAX_UPLOAD_BATCH } from "@market/core/limits";
import { privateTaskHash, publicTaskHash } from "@market/core/crypto";
import type { AgentAnswer, AgentProfile, ExecutorsAnswer, Uploaded, UploadedBatch } from "@market/core/api";
import type { CheckedRow } from "./check";
import type { PostingContext } from "./context";
import type { IndexParams, PostTasksOptions, WrapTo } from "./types";

/** An agent as `GET /api/v1/a2a/executors` lists it: what wrapping a brief key needs. */
type Agent = { address: string; publicKey: AgentProfile["publicKey"] };

/**
 * Registered agents on the posting chain that can open a private brief, per capability set; with `custody`, the
 * service's custody public key each brief key is also wrapped to (`keyCustodyBlob`, re-wrapped at accept).
 */
export type Recipients = Map<string, Agent[]> & { custody?: string };

/** A row made ready to fund: everything but the funding transaction's hash. */
export type PreparedRow = { checked: CheckedRow; params: Omit<IndexParams, "txHash"> };

const capabilitySet = (row: CheckedRow["row"]) => [...row.capabilities].sort().join(",");

/**
 * The agents each private row's brief is wrapped to: those on the posting chain (on any chain with `wrapTo`
 * `any-chain`, the MCP rule) with a public key and every required tag, and only the pinned one for a row with a
 * target. A private row nobody can open refuses the whole call (`INVALID_ROWS`, `NO_EXECUTORS`) before anything is
 * sent.
 */
export async function findRecipients(
  ctx: Pick<PostingContext, "http" | "settlement">,
  rows: readonly CheckedRow[],
  wrapTo: WrapTo = "posting-chain",
  custody?: string,
): Promise<Recipients> {
  const sets: Recipients = new Map();
  if (custody) sets.custody = custody;
  for (const { row } of rows) {
    if (row.privacy !== "private") continue;
    const key = capabilitySet(row);
    if (sets.has(key)) continue;
    if (typeof wrapTo === "object") {
      sets.set(key, [...wrapTo.agents]);
      continue;
    }
    const query = new URLSearchParams({
      ...(wrapTo === "posting-chain" ? { chain: ctx.settlement.chain } : {}),
      ...(key ? { capabilities: key } : {}),
    });
    const { executors } = await ctx.http.get<ExecutorsAnswer>(`/api/v1/a2a/executors?${query}`);
    sets.set(
      key,
      executors.filter((agent) => agent.publicKey),
    );
  }
  const unreachable = rows.filter((c) => c.row.privacy === "private" && recipientsOf(c, sets).length === 0);
  if (unreachable.length > 0) {
    const where = wrapTo === "posting-chain" ? "on the posting chain" : wrapTo === "any-chain" ? "on any chain" : "among the agents named";
    throw clientError("INVALID_ROWS", `No registered agent ${where} can open some private briefs; nothing was sent.`, {
      errors: unreachable.map((c) => ({
        index: c.index,
        column: "capabilities",
        code: "NO_EXECUTORS",
        message: `no agent with a public key and these capabilities is registered ${where}`,
      })),
    });
  }
  return sets;
}

function recipientsOf(checked: CheckedRow, recipients: Recipients): Agent[] {
  const agents = recipients.get(capabilitySet(checked.row)) ?? [];
  return checked.row.target ? agents.filter((agent) => agent.address === checked.row.target) : agents;
}

/** Prepares a row: the task hash, and for a private brief its ciphertext uploaded and its key wrapped. */
export async function prepareRow(
  ctx: PostingContext,
  checked: CheckedRow,
  recipients: Recipients,
  onBriefKey?: PostTasksOptions["onBriefKey"],
): Promise<PreparedRow> {
  return (await prepareRows(ctx, [checked], recipients, onBriefKey))[0]!;
}

/**
 * Prepares the rows of a chunk, in order: each private brief sealed (on the sealer's threads, all at once), then the
 * chunk's ciphertexts uploaded in one request (`POST /storage/upload/batch`, one blob per request to an API without
 * it), then each row's key reported to `onBriefKey`. Rejects as the first failure (nothing is paid while preparing).
 */
export async function prepareRows(
  ctx: PostingContext,
  rows: readonly CheckedRow[],
  recipients: Recipients,
  onBriefKey?: PostTasksOptions["onBriefKey"],
): Promise<PreparedRow[]> {
  const sealing = rows.map((checked) => (checked.row.privacy === "private" ? sealRow(ctx, checked, recipients) : Promise.resolve(undefined)));
  const sealed = await Promise.all(sealing);
  const ciphertexts = sealed.flatMap((s) => (s ? [s.sealed.ciphertext] : []));
  const rootHashes = ciphertexts.length > 0 ? await upload(ctx, ciphertexts) : [];
  let next = 0;
  return rows.map((checked, i) => {
    const common = commonParams(ctx, checked);
    const brief = sealed[i];
    if (!brief) {
      const { row } = checked;
      return { checked, params: { taskHash: publicTaskHash(row.instructions), privacy: "public", publicBrief: row.instructions, ...common } };
    }
    const { sealed: briefSealed, readers } = brief;
    // The task hash is the client's own SHA-256 of the ciphertext, never the storage's word for it.
    const taskHash = privateTaskHash(briefSealed.ciphertext);
    const rootHash = rootHashes[next++]!;
    const rootHex = rootHash.replace(/^0x/i, "").toLowerCase();
    if (/^[0-9a-f]{64}$/.test(rootHex) && `0x${rootHex}` !== taskHash) {
      throw clientError("STORAGE_MISMATCH", `The storage stored the brief as ${rootHash}, not as its SHA-256 ${taskHash}; nothing was paid for it.`);
    }
    onBriefKey?.({ index: checked.index, taskHash, key: briefSealed.key });
    const wraps = briefSealed.wrappedKeys;
    const wrappedKeys = Object.fromEntries(readers.map((reader, r) => [reader.address, wraps[r]!]));
    const custody = recipients.custody ? { keyCustodyBlob: wraps[readers.length]! } : {};
    return { checked, params: { taskHash, privacy: "private", rootHash, wrappedKeys, ...custody, ...common } };
  });
}

/** The row's fields every funding and listing names, private or public. */
function commonParams(ctx: PostingContext, checked: CheckedRow) {
  const { row } = checked;
  return {
    // The posting chain, named to the API when it builds the funding and when it lists it (default: its first postable).
    chain: ctx.settlement.chain,
    verificationMode: checked.verificationMode,
    ...(checked.verificationCriteria ? { verificationCriteria: checked.verificationCriteria } : {}),
    ...(checked.verifierAddress ? { verifierAddress: checked.verifierAddress } : {}),
    requiredCapabilities: row.capabilities,
    ...(row.routingSummary ? { routingSummary: row.routingSummary } : {}),
    locationZone: row.zone,
    ...(row.target ? { targetExecutor: row.target } : {}),
    ...(row.serviceId !== undefined ? { serviceId: row.serviceId } : {}),
  };
}

/** A private row's brief sealed to its readers (the agents it is wrapped to, and its verifier) and the custody key. */
async function sealRow(ctx: PostingContext, checked: CheckedRow, recipients: Recipients) {
  const verifier = checked.verifierAddress;
  const readers: Array<{ address: string; publicKey: string }> = recipientsOf(checked, recipients).map((agent) => ({
    address: agent.address,
    publicKey: agent.publicKey!,
  }));
  if (verifier) {
    const verifierKey = (await ctx.http.get<AgentAnswer>(`/api/v1/a2a/executors/${verifier}`)).profile.publicKey;
    if (!verifierKey) throw clientError("INVALID_ROWS", `The verifier ${verifier} has no public key.`);
    readers.push({ address: verifier, publicKey: verifierKey });
  }
  // Encrypted and its key wrapped off this thread where the engine runs in Node (seal.ts).
  const sealed = await ctx.sealer.seal(checked.row.instructions, [
    ...readers.map((reader) => reader.publicKey),
    ...(recipients.custody ? [recipients.custody] : []),
  ]);
  return { sealed, readers };
}

/**
 * Uploads ciphertexts, answering their rootHashes in order: up to MAX_UPLOAD_BATCH per request (one request for one
 * ciphertext), and one per request when the API has no batch upload (it answers 404 for the route).
 */
async function upload(ctx: PostingContext, ciphertexts: readonly Uint8Array[]): Promise<string[]> {
  const one = async (bytes: Uint8Array) =>
    (await ctx.http.post<Uploaded>("/api/v1/storage/upload", { data: Buffer.from(bytes).toString("base64") })).rootHash;
  if (ciphertexts.length === 1) return [await one(ciphertexts[0]!)];
  const rootHashes: string[] = [];
  for (let at = 0; at < ciphertexts.length; at += MAX_UPLOAD_BATCH) {
    const part = ciphertexts.slice(at, at + MAX_UPLOAD_BATCH);
    try {
      const { blobs } = await ctx.http.post<UploadedBatch>("/api/v1/storage/upload/batch", {
        blobs: part.map((bytes) => ({ data: Buffer.from(bytes).toString("base64") })),
      });
      rootHashes.push(...blobs.map((b) => b.rootHash));
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
      rootHashes.push(...(await Promise.all(part.map(one))));
    }
  }
  return rootHashes;
}

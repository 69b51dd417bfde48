import { getAddress, ZeroHash } from "ethers";
import type { Chain } from "../chains";
import type { BlobStore } from "../storage/blob-store";
import { capabilityTags, type AgentRegistry } from "../agents";
import type { ListedFields } from "./listing-codec";
import { addressParam } from "../http/params";
import type { TaskFieldsInput } from "@market/core/api";
import { MarketError, type ErrorDetail } from "@market/core/errors";
import { publicTaskHash } from "@market/core/crypto";
import { checksumAddress } from "@market/core/addresses";
import { isRentalCriteria, validateCriteria, type VerificationMode } from "@market/core/verification";
import { DEFAULT_ZONE, RENTAL_DURATION_SECONDS } from "@market/core/limits";

/** A task's listed properties, checked and normalized (addresses checksummed, hashes lowercase). */
export interface TaskTerms extends ListedFields {
  chain: string;
  taskHash: string;
  /** Agent address to hex wrapped key (no 0x). */
  wrappedKeys: Record<string, string>;
}

export interface TermsDeps {
  /** Whether a blob is stored: a store names each blob by the SHA-256 of its bytes (BlobStore). */
  blobs: Pick<BlobStore, "has">;
  agents: Pick<AgentRegistry, "find" | "get">;
  /** Whether this service can open a custody copy of the brief key (it holds the key the copy was wrapped to). */
  custody: { opens(keyCustodyBlob: string): boolean };
  /** A rental's service as its listing checks read it; undefined when unknown or deleted (server/services). */
  services: { rentalTerms(serviceId: number): Promise<{ agentAddress: string; priceRaw: bigint; active: boolean } | undefined> };
}

/**
 * The dependencies for checking the tasks of one batch at once (a chunk's funding built, or its receipt listed): an
 * agent lookup asked before in the batch is answered from that first lookup, since a chunk's private briefs are
 * mostly wrapped to the same agents. Lives as long as the batch's request; a lookup that failed is asked again.
 */
export function batchTermsDeps(deps: TermsDeps): TermsDeps {
  const found = new Map<string, ReturnType<TermsDeps["agents"]["find"]>>();
  return {
    ...deps,
    agents: {
      get: (address) => deps.agents.get(address),
      find(filter) {
        // The answer does not depend on the order of `addresses` (agents come by reputation, then address).
        const key = JSON.stringify({ ...filter, addresses: filter.addresses && [...filter.addresses].sort() });
        let answer = found.get(key);
        if (!answer) {
          answer = deps.agents.find(filter);
          found.set(key, answer);
          answer.catch(() => found.delete(key));
        }
        return answer;
      },
    },
  };
}

/** A stored blob's rootHash as its SHA-256 is written (0x + lowercase hex), however the caller wrote it. */
const blobName = (rootHash: string) => `0x${rootHash.toLowerCase().replace(/^0x/, "")}`;

/**
 * Every posting rule of a task's properties, shared by building the funding transaction and listing the funded task.
 * Throws the first refusal as a coded error; changes nothing.
 */
export async function checkTerms(input: TaskFieldsInput, poster: string, chain: Chain, deps: TermsDeps): Promise<TaskTerms> {
  const taskHash = input.taskHash.toLowerCase();
  if (taskHash === ZeroHash) throw new MarketError("INVALID_TASK_HASH", "The task hash must not be zero.");
  if (input.token !== undefined && getAddress(input.token) !== chain.config.token) {
    throw new MarketError("TOKEN_NOT_SETTLEMENT", `The token must be ${chain.config.token}, the settlement token of ${chain.name}.`);
  }

  const mode = input.verificationMode;
  if (mode !== "auto" && mode !== "manual" && mode !== "agent") {
    throw new MarketError("UNSUPPORTED_VERIFICATION_MODE", `Verification mode ${JSON.stringify(mode)} is not supported; use auto, manual or agent.`);
  }
  requireValidCriteria(input.verificationCriteria ?? undefined, mode);

  const privacy = input.privacy ?? "private";
  const wrappedKeys = normalizeWrappedKeys(input.wrappedKeys);
  if (privacy === "public") {
    if (input.publicBrief === undefined) throw new MarketError("PUBLIC_BRIEF_REQUIRED", "A public task needs `publicBrief`.");
    if (Object.keys(wrappedKeys).length > 0 || input.keyCustodyBlob !== undefined) throw new MarketError("PUBLIC_TASK_KEYS");
    if (publicTaskHash(input.publicBrief) !== taskHash) {
      throw new MarketError("TASK_HASH_MISMATCH", "A public task's hash must be the SHA-256 of its brief text (UTF-8).");
    }
  } else {
    if (input.publicBrief !== undefined) throw new MarketError("PUBLIC_BRIEF_REQUIRED", "`publicBrief` is only for tasks with `privacy` = `public`.");
    if (input.rootHash === undefined) {
      throw new MarketError("VALIDATION_FAILED", "A private task needs `rootHash`, from uploading its ciphertext.", {
        details: [{ field: "body.rootHash", message: "is required for a private task" }],
      });
    }
    if (!(await deps.blobs.has(input.rootHash))) throw new MarketError("BLOB_NOT_FOUND");
    // A stored blob's name is the SHA-256 of its bytes (the store computes it at upload): the name is the ciphertext's
    // hash, without reading and hashing the blob again at each funding and listing.
    if (blobName(input.rootHash) !== taskHash) {
      throw new MarketError("TASK_HASH_MISMATCH", "A private task's hash must be the SHA-256 of its ciphertext (the uploaded blob).");
    }
  }

  const requiredCapabilities = capabilityTags(input.requiredCapabilities ?? [], "body.requiredCapabilities");
  const targetExecutor = input.targetExecutor === undefined ? null : addressParam(input.targetExecutor, "body.targetExecutor");
  if (targetExecutor === poster) throw new MarketError("TARGET_IS_POSTER");

  // The zero address would be funded as "no verifier" and the listing then refused (VERIFIER_MODE_MISMATCH).
  const verifierAddress = input.verifierAddress === undefined ? null : addressParam(input.verifierAddress, "body.verifierAddress");
  if (mode === "agent") {
    if (!verifierAddress) throw new MarketError("VERIFIER_REQUIRED");
    if (verifierAddress === poster || verifierAddress === targetExecutor) throw new MarketError("VERIFIER_NOT_ALLOWED");
    // The verifier never accepts, so a custody copy (re-wrapped only at accept) cannot stand in for its wrap.
    if (privacy === "private" && !wrappedKeys[verifierAddress]) throw new MarketError("VERIFIER_KEY_MISSING");
  } else if (verifierAddress) {
    throw new MarketError("VERIFIER_MODE_MISMATCH", "`verifierAddress` is only for `agent` verification.");
  }

  if (input.serviceId !== undefined && !targetExecutor) throw new MarketError("SERVICE_REQUIRES_TARGET");

  if (targetExecutor) {
    const [target] = await deps.agents.find({ addresses: [targetExecutor], chain: chain.name });
    if (!target) {
      throw new MarketError("TARGET_CHAIN_UNSUPPORTED", `${targetExecutor} is not registered with a public key for ${chain.name}.`);
    }
  }

  if (privacy === "private") {
    // Someone must be able to open the brief: an agent it is wrapped to (or any eligible agent when this service can
    // open the custody copy to re-wrap it), registered on the chain with a public key and every required capability.
    const rewrappable = input.keyCustodyBlob !== undefined && deps.custody.opens(input.keyCustodyBlob);
    const candidates = rewrappable ? undefined : Object.keys(wrappedKeys);
    const eligible = await deps.agents.find({
      chain: chain.name,
      capabilities: requiredCapabilities,
      addresses: targetExecutor ? [targetExecutor].filter((a) => !candidates || candidates.includes(a)) : candidates,
      limit: 1,
    });
    if (eligible.length === 0) {
      throw new MarketError(
        "NO_EXECUTORS",
        targetExecutor
          ? `The brief key is not wrapped to the pinned agent ${targetExecutor}.`
          : `No agent the brief is wrapped to is registered on ${chain.name} with a public key and every required capability.`,
      );
    }
  }

  return {
    chain: chain.name,
    taskHash,
    privacy,
    publicBrief: privacy === "public" ? (input.publicBrief ?? null) : null,
    routingSummary: input.routingSummary ?? null,
    rootHash: input.rootHash ?? null,
    verificationMode: mode,
    verificationCriteria: input.verificationCriteria ?? null,
    verifierAddress,
    requiredCapabilities,
    locationZone: input.locationZone ?? DEFAULT_ZONE,
    targetExecutor,
    targetExecutorType: input.targetExecutorType ?? null,
    serviceId: input.serviceId ?? null,
    wrappedKeys,
    keyCustodyBlob: input.keyCustodyBlob ?? null,
  };
}

/**
 * The listing checks of a rental (a task with `serviceId`), besides those of every pinned task (`checkTerms`: the
 * agent registered on the chain, the brief wrapped to it) and the token (the funding's must be the settlement token):
 * the service exists, is the pinned agent's, is active, and the escrow covers its current price; and the task is a
 * rental's (spec "Rental", "Limits"): auto-verified with exactly the rental criteria, for one hour. A rental judged
 * by its poster (manual), by a verifier the poster picks (agent) or by stricter criteria could be failed at will, the
 * output read and the price refunded, and the hosted agent never resubmits a rental. Run when the funding is built and
 * again at the first listing, so a price raised or a service deactivated meanwhile refuses the listing (the poster
 * cancels for a full refund); a listed rental keeps what it escrowed whatever the service does later. The agent's own
 * `minReward` never applies to a rental.
 */
export async function checkRental(
  terms: Pick<TaskTerms, "serviceId" | "targetExecutor" | "verificationMode" | "verificationCriteria">,
  escrow: { amount: bigint; durationSeconds: number },
  deps: Pick<TermsDeps, "services">,
) {
  if (terms.serviceId === null) return;
  const amount = escrow.amount;
  const service = await deps.services.rentalTerms(terms.serviceId);
  if (!service) throw new MarketError("SERVICE_NOT_FOUND", `No service ${terms.serviceId}.`);
  if (service.agentAddress !== terms.targetExecutor) {
    throw new MarketError(
      "SERVICE_AGENT_MISMATCH",
      `Service ${terms.serviceId} is ${service.agentAddress}'s: set targetExecutor to that agent (it is ${terms.targetExecutor ?? "unset"}).`,
    );
  }
  if (!service.active) throw new MarketError("SERVICE_NOT_ACTIVE", `Service ${terms.serviceId} is deactivated and takes no new rentals.`);
  if (amount < service.priceRaw) {
    throw new MarketError("UNDERPAID", `Service ${terms.serviceId} costs ${service.priceRaw} raw units; the escrow holds ${amount}.`);
  }
  const differs: ErrorDetail[] = [];
  if (terms.verificationMode !== "auto") differs.push({ field: "body.verificationMode", message: "must be auto for a rental" });
  if (!isRentalCriteria(terms.verificationCriteria))
    differs.push({ field: "body.verificationCriteria", message: "must be exactly { min_length: 20 } for a rental" });
  if (escrow.durationSeconds !== RENTAL_DURATION_SECONDS)
    differs.push({ field: "body.duration", message: `must be ${RENTAL_DURATION_SECONDS} seconds for a rental (got ${escrow.durationSeconds})` });
  if (differs.length > 0) {
    throw new MarketError(
      "RENTAL_TERMS_MISMATCH",
      `A rental is auto-verified with { min_length: 20 } for one hour: ${differs.map((d) => `${d.field} ${d.message}`).join("; ")}.`,
      {
        details: differs,
      },
    );
  }
}

/** Criteria checked by the shared rules (core/verification); any problem is `INVALID_CRITERIA`, one detail each. */
export function requireValidCriteria(criteria: unknown, mode: VerificationMode): void {
  const issues = validateCriteria(criteria, mode);
  if (issues.length === 0) return;
  throw new MarketError("INVALID_CRITERIA", issues.map((i) => i.message).join("; "), {
    details: issues.map((i): ErrorDetail => ({ code: i.code, field: `body.${i.field}`, message: i.message })),
  });
}

/** `wrappedKeys` with checksummed addresses and hex values without 0x, lowercase. */
export function normalizeWrappedKeys(keys: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [address, wrapped] of Object.entries(keys ?? {})) {
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) {
      throw new MarketError("VALIDATION_FAILED", `wrappedKeys has a key that is not an address: ${JSON.stringify(address)}`, {
        details: [{ field: `body.wrappedKeys.${address}`, message: "is not a 20-byte hex address" }],
      });
    }
    out[checksumAddress(address)] = wrapped.replace(/^0x/, "").toLowerCase();
  }
  return out;
}

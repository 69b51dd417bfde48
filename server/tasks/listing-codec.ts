import type { Insertable } from "kysely";
import { json } from "../db";
import type { Listing, ListingsTable, ListingWithAmount } from "../db/schema";
import { asAddress, asRawAmount, asTaskHash, type TaskMeta } from "@market/core/api";
import { isChainName, SETTLEMENT_UNIT, type ChainName } from "@market/core/chains";
import { PUBLIC_BRIEF_PREVIEW_CHARS } from "@market/core/limits";
import type { VerificationCriteria, VerificationMode } from "@market/core/verification";

/**
 * The one mapping between a task's listed properties (what its first listing fixes), its `listings` row and the
 * answers that show them. Listing writes a row with `listingRow`; everything that reads a row reads it with
 * `listedFields`, and the task view's metadata is `listingMeta`.
 */
export interface ListedFields {
  privacy: "public" | "private";
  publicBrief: string | null;
  routingSummary: string | null;
  rootHash: string | null;
  verificationMode: VerificationMode;
  verificationCriteria: VerificationCriteria | null;
  verifierAddress: string | null;
  requiredCapabilities: string[];
  locationZone: string;
  targetExecutor: string | null;
  targetExecutorType: string | null;
  serviceId: number | null;
  keyCustodyBlob: string | null;
}

/** What the funding receipt and the listing request add to the listed fields. */
export interface ListingOrigin {
  taskHash: string;
  chain: ChainName;
  poster: string;
  token: string;
  fundingTx: string;
  listedAt: number;
}

/** A new `listings` row. */
export function listingRow(fields: ListedFields, origin: ListingOrigin): Insertable<ListingsTable> {
  return {
    task_hash: origin.taskHash,
    chain: origin.chain,
    poster: origin.poster,
    privacy: fields.privacy,
    public_brief: fields.publicBrief,
    routing_summary: fields.routingSummary,
    root_hash: fields.rootHash,
    verification_mode: fields.verificationMode,
    verification_criteria: fields.verificationCriteria === null ? null : json.write(fields.verificationCriteria),
    required_capabilities: json.write(fields.requiredCapabilities),
    location_zone: fields.locationZone,
    target_executor: fields.targetExecutor,
    target_executor_type: fields.targetExecutorType,
    service_id: fields.serviceId,
    verifier_address: fields.verifierAddress,
    key_custody_blob: fields.keyCustodyBlob,
    token: origin.token,
    funding_tx: origin.fundingTx.toLowerCase(),
    listed_at: origin.listedAt,
  };
}

/** The listed fields of a `listings` row. */
export function listedFields(row: Listing): ListedFields {
  return {
    privacy: row.privacy,
    publicBrief: row.public_brief,
    routingSummary: row.routing_summary,
    rootHash: row.root_hash,
    verificationMode: row.verification_mode,
    verificationCriteria: json.read<VerificationCriteria>(row.verification_criteria),
    verifierAddress: row.verifier_address,
    requiredCapabilities: json.read<string[]>(row.required_capabilities) ?? [],
    locationZone: row.location_zone,
    targetExecutor: row.target_executor,
    targetExecutorType: row.target_executor_type,
    serviceId: row.service_id,
    keyCustodyBlob: row.key_custody_blob,
  };
}

/** The row's chain, which only ever holds a configured chain's name. */
export function listingChain(row: Pick<Listing, "chain">): ChainName {
  if (!isChainName(row.chain)) throw new Error(`listing on unknown chain ${row.chain}`);
  return row.chain;
}

/**
 * A task's metadata as the API shows it, from its listing and its deadline on chain (block-time seconds, answered as
 * Unix milliseconds like every time on the wire). Optional fields are left out when not set; a public brief shows its
 * first PUBLIC_BRIEF_PREVIEW_CHARS characters.
 */
export function listingMeta(row: ListingWithAmount, deadlineSeconds: number): TaskMeta {
  const f = listedFields(row);
  const brief = f.publicBrief;
  return {
    chain: listingChain(row),
    taskHash: asTaskHash(row.task_hash),
    poster: asAddress(row.poster),
    privacy: f.privacy,
    reward: { amount: asRawAmount(row.amount), unit: { ...SETTLEMENT_UNIT, address: asAddress(row.token) } },
    ...(f.routingSummary === null ? {} : { routingSummary: f.routingSummary }),
    ...(brief === null
      ? {}
      : { publicBrief: brief.slice(0, PUBLIC_BRIEF_PREVIEW_CHARS), publicBriefTruncated: brief.length > PUBLIC_BRIEF_PREVIEW_CHARS }),
    ...(f.rootHash === null ? {} : { rootHash: f.rootHash }),
    verificationMode: f.verificationMode,
    ...(f.verificationCriteria === null ? {} : { verificationCriteria: f.verificationCriteria }),
    ...(f.verifierAddress === null ? {} : { verifierAddress: asAddress(f.verifierAddress) }),
    requiredCapabilities: f.requiredCapabilities,
    locationZone: f.locationZone,
    ...(f.targetExecutor === null ? {} : { targetExecutor: asAddress(f.targetExecutor) }),
    ...(f.targetExecutorType === null ? {} : { targetExecutorType: f.targetExecutorType }),
    ...(f.serviceId === null ? {} : { serviceId: f.serviceId }),
    deadline: deadlineSeconds * 1000,
    listedAt: row.listed_at,
    fundingTx: row.funding_tx,
  };
}

/**
 * The events of the two registries beside an escrow (contracts/identity/AgentIdentity.sol, ERC-8004-compatible, and
 * contracts/reputation/TaskReputation.sol) that the indexer keeps, and their one decoder. Other logs of the registries
 * (roles, upgrades, approvals, ERC-4906 metadata updates) change nothing the service reads and are not kept.
 */
import { concat, getAddress, getBytes, hexlify, sha256, type Interface } from "ethers";
import { AgentIdentity__factory } from "../typechain-types/factories/contracts/identity/AgentIdentity__factory";
import { TaskReputation__factory } from "../typechain-types/factories/contracts/reputation/TaskReputation__factory";
import type { LogPosition } from "./escrow";

/** Which registry emitted a log. */
export type RegistryName = "identity" | "reputation";

/** Arguments as stored: integers as decimal strings, addresses checksummed, bytes as 0x hex. */
export type RegistryEvent =
  | { event: "Registered"; args: { agentId: string; agentURI: string; owner: string } }
  | { event: "URIUpdated"; args: { agentId: string; newURI: string; updatedBy: string } }
  | { event: "MetadataSet"; args: { agentId: string; metadataKey: string; metadataValue: string } }
  | { event: "Transfer"; args: { from: string; to: string; tokenId: string } }
  | { event: "CompletionRecorded"; args: { agent: string; writer: string; taskHash: string; scored: boolean; score: number } }
  | { event: "DisputeRecorded"; args: { agent: string; writer: string; taskHash: string } };

export type RegistryEventName = RegistryEvent["event"];

/** One kept registry log: where it sits, which registry emitted it, and its event. */
export type RegistryLog = LogPosition & { registry: RegistryName } & RegistryEvent;

const KEPT: Record<RegistryName, readonly RegistryEventName[]> = {
  identity: ["Registered", "URIUpdated", "MetadataSet", "Transfer"],
  reputation: ["CompletionRecorded", "DisputeRecorded"],
};

const INTERFACES: Record<RegistryName, Interface> = {
  identity: AgentIdentity__factory.createInterface(),
  reputation: TaskReputation__factory.createInterface(),
};

/** The event of a registry's log as stored, or undefined for a log the service does not keep. */
export function decodeRegistryEvent(registry: RegistryName, topics: readonly string[], data: string): RegistryEvent | undefined {
  let parsed: ReturnType<Interface["parseLog"]>;
  try {
    parsed = INTERFACES[registry].parseLog({ topics: [...topics], data });
  } catch {
    return undefined;
  }
  if (!parsed || !(KEPT[registry] as readonly string[]).includes(parsed.name)) return undefined;
  const a = parsed.args;
  switch (parsed.name) {
    case "Registered":
      return { event: "Registered", args: { agentId: String(a.agentId), agentURI: String(a.agentURI), owner: getAddress(String(a.owner)) } };
    case "URIUpdated":
      return { event: "URIUpdated", args: { agentId: String(a.agentId), newURI: String(a.newURI), updatedBy: getAddress(String(a.updatedBy)) } };
    case "MetadataSet":
      return {
        event: "MetadataSet",
        args: { agentId: String(a.agentId), metadataKey: String(a.metadataKey), metadataValue: hexlify(a.metadataValue as string) },
      };
    case "Transfer":
      return { event: "Transfer", args: { from: getAddress(String(a.from)), to: getAddress(String(a.to)), tokenId: String(a.tokenId) } };
    case "CompletionRecorded":
      return {
        event: "CompletionRecorded",
        args: {
          agent: getAddress(String(a.agent)),
          writer: getAddress(String(a.writer)),
          taskHash: String(a.taskHash),
          scored: Boolean(a.scored),
          score: Number(a.score),
        },
      };
    case "DisputeRecorded":
      return {
        event: "DisputeRecorded",
        args: { agent: getAddress(String(a.agent)), writer: getAddress(String(a.writer)), taskHash: String(a.taskHash) },
      };
    default:
      return undefined;
  }
}

/** A registry log with its position, or undefined when the service does not keep it. */
export function decodeRegistryLog(position: LogPosition, registry: RegistryName, topics: readonly string[], data: string): RegistryLog | undefined {
  const event = decodeRegistryEvent(registry, topics, data);
  return event ? { ...position, registry, ...event } : undefined;
}

/** An event read back from storage (the decoder's output as JSON). */
export function storedRegistryEvent(name: string, args: unknown): RegistryEvent {
  if (!(Object.values(KEPT).flat() as string[]).includes(name) || typeof args !== "object" || args === null) {
    throw new Error(`stored registry event ${name} is not one the service keeps`);
  }
  // The decoder wrote exactly these fields for this name.
  return { event: name, args } as RegistryEvent;
}

/** What an event is about, the key its projection rebuilds by: the agent id (identity) or the agent wallet (reputation). */
export function registrySubject(event: RegistryEvent): string {
  switch (event.event) {
    case "Registered":
    case "URIUpdated":
    case "MetadataSet":
      return event.args.agentId;
    case "Transfer":
      return event.args.tokenId;
    case "CompletionRecorded":
    case "DisputeRecorded":
      return event.args.agent;
  }
}

/** The `agentWallet` metadata value (20 bytes, or empty once cleared) as an address, or null. */
export function agentWalletOf(metadataValue: string): string | null {
  return metadataValue.length === 42 ? getAddress(metadataValue) : null;
}

/**
 * The identity token's `metadataHash` entry (spec, "Identity NFT"): SHA-256 of the agent wallet address (20 bytes)
 * followed by its public key (the bytes of the hex the agent registered, with or without 0x), as 0x hex.
 */
export function identityMetadataHash(agentWallet: string, publicKey: string): string {
  const key = publicKey.startsWith("0x") ? publicKey : `0x${publicKey}`;
  return sha256(concat([getAddress(agentWallet), getBytes(key)]));
}

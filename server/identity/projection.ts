import type { Transaction } from "kysely";
import type { Database } from "../db/schema";
import { fromRegistryEventRow } from "../indexer/events";
import type { RegistryProjection } from "../indexer/projection";
import { agentWalletOf, type RegistryLog } from "@market/core/registries";
import { ZeroAddress } from "ethers";

type Trx = Transaction<Database>;

/** The metadata keys the service reads (ERC-8004 `agentWallet`; the spec's `metadataHash`). */
export const AGENT_WALLET_KEY = "agentWallet";
export const METADATA_HASH_KEY = "metadataHash";

/** Applies one identity event to the stored token, in chain order. */
async function applyOne(trx: Trx, chain: string, event: RegistryLog): Promise<void> {
  const token = (agentId: string) => trx.updateTable("identity_tokens").where("chain", "=", chain).where("agent_id", "=", agentId);
  switch (event.event) {
    case "Registered":
      await trx
        .insertInto("identity_tokens")
        .values({
          chain,
          agent_id: event.args.agentId,
          owner: event.args.owner,
          agent_uri: event.args.agentURI,
          agent_wallet: null,
          metadata_hash: null,
          registered_block: event.blockNumber,
          updated_block: event.blockNumber,
        })
        .execute();
      return;
    case "URIUpdated":
      await token(event.args.agentId).set({ agent_uri: event.args.newURI, updated_block: event.blockNumber }).execute();
      return;
    case "MetadataSet": {
      const { metadataKey, metadataValue } = event.args;
      if (metadataKey === AGENT_WALLET_KEY) {
        await token(event.args.agentId)
          .set({ agent_wallet: agentWalletOf(metadataValue), updated_block: event.blockNumber })
          .execute();
      } else if (metadataKey === METADATA_HASH_KEY) {
        await token(event.args.agentId).set({ metadata_hash: metadataValue, updated_block: event.blockNumber }).execute();
      }
      return;
    }
    case "Transfer":
      // A mint's Transfer comes before its Registered, which creates the row with the same owner; a burn has no
      // function in the contract.
      if (event.args.from === ZeroAddress || event.args.to === ZeroAddress) return;
      await token(event.args.tokenId).set({ owner: event.args.to, updated_block: event.blockNumber }).execute();
      return;
    default:
      return;
  }
}

/**
 * Keeps `identity_tokens` in step with the identity contract's events: each token's owner, agent URI, agent wallet
 * and metadata hash. A reorg deletes the tokens the removed events touched and replays what remains of their events.
 */
export function createIdentityProjection(): RegistryProjection {
  return {
    name: "identity",
    source: "registries",
    async apply(trx, chain, events) {
      for (const event of events) if (event.registry === "identity") await applyOne(trx, chain, event);
    },
    async rollback(trx, chain, removed) {
      const ids = new Set<string>();
      for (const event of removed) {
        if (event.registry !== "identity") continue;
        ids.add(event.event === "Transfer" ? event.args.tokenId : "agentId" in event.args ? event.args.agentId : "");
      }
      ids.delete("");
      if (ids.size === 0) return;
      await trx
        .deleteFrom("identity_tokens")
        .where("chain", "=", chain)
        .where("agent_id", "in", [...ids])
        .execute();
      const rows = await trx
        .selectFrom("registry_events")
        .selectAll()
        .where("chain", "=", chain)
        .where("registry", "=", "identity")
        .where("subject", "in", [...ids])
        .orderBy("block_number")
        .orderBy("log_index")
        .execute();
      for (const row of rows) await applyOne(trx, chain, fromRegistryEventRow(row));
    },
  };
}

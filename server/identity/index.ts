/**
 * Identity: the agents' ERC-8004 identity tokens as the indexer projects them (`identityOf`, for the agent card), and
 * the minting service hosted-agent deploys call (`requestMint`): it mints the token on the identity chain (`0g`) to
 * the owner's wallet with `registerFor(owner, agentURI, metadata)`, best effort. A mint that fails is recorded in
 * identity_mints and retried later with a growing back-off; it never fails the caller, and an agent never gets two
 * tokens (one record per agent wallet, one outbox purpose per agent, and the chain's `agentIdOfWallet` is asked
 * before every attempt). Self-run workers get none: only hosted deploys call it.
 */
import { getAddress, isAddress } from "ethers";
import type { Selectable } from "kysely";
import type { Db } from "../db";
import type { IdentityMintsTable } from "../db/schema";
import type { ChainRegistry } from "../chains";
import type { Outbox } from "../outbox";
import type { Clock } from "../http/types";
import { AgentIdentity__factory } from "../../typechain-types";
import { identityMetadataHash } from "@market/core/registries";
import type { AgentIdentityRef } from "@market/core/api";
import type { ChainName } from "@market/core/chains";
import { AGENT_WALLET_KEY, METADATA_HASH_KEY } from "./projection";

export { createIdentityProjection, AGENT_WALLET_KEY, METADATA_HASH_KEY } from "./projection";

/** An agent's identity token with the registry it lives on, as the card shows it. */
export interface AgentIdentityView extends AgentIdentityRef {
  /** The chain's id, for ERC-8004's `eip155:<chainId>:<registry>` form. */
  chainId: number;
}

/** The newest identity token whose `agentWallet` is the address, on a chain whose identity contract is configured. */
export function createIdentityLookup({ db, chains }: { db: Db; chains: Pick<ChainRegistry, "get"> }) {
  return {
    async identityOf(agentWallet: string): Promise<AgentIdentityView | null> {
      const rows = await db
        .selectFrom("identity_tokens")
        .select(["chain", "agent_id", "owner", "registered_block"])
        .where("agent_wallet", "=", agentWallet)
        .orderBy("registered_block", "desc")
        .execute();
      for (const row of rows) {
        const config = chains.get(row.chain)?.config;
        if (!config?.identity) continue;
        return {
          chain: row.chain,
          chainId: config.chainId,
          agentId: row.agent_id,
          contract: config.identity.address as AgentIdentityView["contract"],
          owner: row.owner as AgentIdentityView["owner"],
        };
      }
      return null;
    },
  };
}
export type IdentityLookup = ReturnType<typeof createIdentityLookup>;

/** What a hosted-agent deploy hands the minting service. */
export interface MintRequest {
  /** The agent's wallet: the token's `agentWallet`. */
  agentWallet: string;
  /** The agent's public key (hex), hashed with its wallet into `metadataHash`. */
  agentPublicKey: string;
  /** The owner's wallet: the token is minted to it. */
  ownerWallet: string;
  /** The agent card URL: the token's `agentURI`. */
  cardUrl: string;
}

/** A mint's record. */
export interface MintStatus {
  agentWallet: string;
  chain: string;
  ownerWallet: string;
  cardUrl: string;
  metadataHash: string;
  /** `pending` until a mint is confirmed (retried at `nextAttemptAt`), then `minted`. */
  state: "pending" | "minted";
  attempts: number;
  nextAttemptAt: number | null;
  lastError: string | null;
  agentId: string | null;
  txHash: string | null;
}

export interface IdentityMintingOptions {
  db: Db;
  chains: Pick<ChainRegistry, "get">;
  /** The verifier key's outbox per chain: it holds the identity's minter role (deploy/registries.ts grants it). */
  outboxes: ReadonlyMap<string, Outbox>;
  now: Clock;
  /** The chain tokens are minted on. */
  chain: ChainName;
  /** First pause after a failure (ms), doubled per failure up to `maxRetryMs`. */
  retryMs: number;
  maxRetryMs: number;
  /** How often due retries are looked for once started (ms). Default: `retryMs`, at most 30 s. */
  pollMs?: number;
  /** How long one attempt waits for its transaction (ms); a later attempt waits for the same transaction. */
  confirmTimeoutMs?: number;
  logger?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

export type IdentityMinting = ReturnType<typeof createIdentityMinting>;

function statusOf(row: Selectable<IdentityMintsTable>): MintStatus {
  return {
    agentWallet: row.agent_wallet,
    chain: row.chain,
    ownerWallet: row.owner_wallet,
    cardUrl: row.card_url,
    metadataHash: row.metadata_hash,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at === null ? null : Number(row.next_attempt_at),
    lastError: row.last_error,
    agentId: row.agent_id,
    txHash: row.tx_hash,
  };
}

/** The outbox purpose of an agent's mint: one transaction per agent, unless it reverted. */
export const mintPurpose = (chain: string, agentWallet: string) => `identity-mint:${chain}:${agentWallet}`;

export function createIdentityMinting(options: IdentityMintingOptions) {
  const { db, chains, outboxes, now, chain: chainName } = options;
  const pollMs = options.pollMs ?? Math.min(options.retryMs, 30_000);
  const running = new Map<string, Promise<MintStatus | undefined>>();
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> | undefined;
  let stopped = false;

  const read = async (agentWallet: string) => db.selectFrom("identity_mints").selectAll().where("agent_wallet", "=", agentWallet).executeTakeFirst();

  const backoff = (attempts: number) => Math.min(options.maxRetryMs, options.retryMs * 2 ** Math.min(Math.max(0, attempts - 1), 30));

  async function minted(agentWallet: string, agentId: string, txHash: string | null): Promise<void> {
    await db
      .updateTable("identity_mints")
      .set({ state: "minted", agent_id: agentId, tx_hash: txHash, next_attempt_at: null, last_error: null, updated_at: now() })
      .where("agent_wallet", "=", agentWallet)
      .execute();
  }

  async function failed(row: Selectable<IdentityMintsTable>, error: unknown): Promise<void> {
    const attempts = row.attempts + 1;
    const message = error instanceof Error ? error.message : String(error);
    await db
      .updateTable("identity_mints")
      .set({ attempts, next_attempt_at: now() + backoff(attempts), last_error: message.slice(0, 1_000), updated_at: now() })
      .where("agent_wallet", "=", row.agent_wallet)
      .where("state", "=", "pending")
      .execute();
    options.logger?.warn({ agent: row.agent_wallet, chain: row.chain, attempts, err: message }, "identity mint failed; will retry");
  }

  /** One attempt for a pending record; resolves with the record afterwards, and never rejects. */
  async function attemptOnce(agentWallet: string): Promise<MintStatus | undefined> {
    const row = await read(agentWallet);
    if (!row || row.state === "minted") return row && statusOf(row);
    try {
      const chain = chains.get(row.chain);
      const registry = chain?.config.identity;
      const outbox = outboxes.get(row.chain);
      if (!chain || !registry) throw new Error(`no identity contract is configured on ${row.chain}`);
      if (!outbox) throw new Error(`no marketplace verifier key is configured on ${row.chain}`);
      const identity = AgentIdentity__factory.connect(registry.address, chain.provider);
      // A token already names this wallet (an earlier attempt whose answer was lost, or another registration): the
      // agent has its identity, and a second one is never minted.
      const existing = await identity.agentIdOfWallet(row.agent_wallet);
      if (existing !== 0n) {
        await minted(row.agent_wallet, existing.toString(), row.tx_hash);
        return statusOf((await read(agentWallet))!);
      }
      const data = identity.interface.encodeFunctionData("registerFor", [
        row.owner_wallet,
        row.card_url,
        [
          { metadataKey: AGENT_WALLET_KEY, metadataValue: row.agent_wallet },
          { metadataKey: METADATA_HASH_KEY, metadataValue: row.metadata_hash },
        ],
      ]);
      const sent = await outbox.send(mintPurpose(row.chain, row.agent_wallet), registry.address, data, options.confirmTimeoutMs);
      const registered = sent.receipt.logs
        .filter((log) => log.address.toLowerCase() === registry.address.toLowerCase())
        .map((log) => identity.interface.parseLog(log))
        .find((parsed) => parsed?.name === "Registered");
      if (!registered) throw new Error(`transaction ${sent.txHash} registered no agent`);
      await minted(row.agent_wallet, registered.args.agentId.toString(), sent.txHash);
      options.logger?.info({ agent: row.agent_wallet, chain: row.chain, agentId: registered.args.agentId.toString() }, "identity minted");
    } catch (error) {
      await failed(row, error).catch(() => undefined);
    }
    const after = await read(agentWallet);
    return after && statusOf(after);
  }

  /** One attempt at a time per agent: a second caller shares the running one. */
  function attempt(agentWallet: string): Promise<MintStatus | undefined> {
    const current = running.get(agentWallet);
    if (current) return current;
    const run = attemptOnce(agentWallet)
      .catch((error: unknown) => {
        options.logger?.warn({ agent: agentWallet, err: error }, "identity mint attempt failed");
        return undefined;
      })
      .finally(() => running.delete(agentWallet));
    running.set(agentWallet, run);
    return run;
  }

  /** Attempts every pending mint whose retry is due; resolves with their records. */
  async function runDue(): Promise<MintStatus[]> {
    const due = await db
      .selectFrom("identity_mints")
      .select("agent_wallet")
      .where("state", "=", "pending")
      .where("next_attempt_at", "<=", now())
      .orderBy("next_attempt_at")
      .limit(100)
      .execute();
    const results = await Promise.all(due.map((row) => attempt(row.agent_wallet)));
    return results.filter((r): r is MintStatus => r !== undefined);
  }

  function schedule() {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      sweeping = runDue()
        .catch((error: unknown) => options.logger?.warn({ err: error }, "identity mint retries failed"))
        .finally(() => {
          sweeping = undefined;
          schedule();
        });
    }, pollMs);
    // Retries never keep the process alive on their own.
    timer.unref();
  }

  return {
    /**
     * Records the agent's mint and starts its first attempt without waiting for it; resolves with the record as
     * recorded (`pending`, or `minted` when the agent already had its token). Never rejects: a mint that cannot even be
     * recorded (bad input, a database error) is logged and answers undefined.
     */
    async requestMint(request: MintRequest): Promise<MintStatus | undefined> {
      try {
        if (!isAddress(request.agentWallet) || !isAddress(request.ownerWallet)) throw new Error("agentWallet and ownerWallet must be addresses");
        const agentWallet = getAddress(request.agentWallet);
        const at = now();
        await db
          .insertInto("identity_mints")
          .values({
            agent_wallet: agentWallet,
            chain: chainName,
            owner_wallet: getAddress(request.ownerWallet),
            card_url: request.cardUrl,
            metadata_hash: identityMetadataHash(agentWallet, request.agentPublicKey),
            state: "pending",
            attempts: 0,
            next_attempt_at: at,
            last_error: null,
            agent_id: null,
            tx_hash: null,
            created_at: at,
            updated_at: at,
          })
          .onConflict((oc) => oc.column("agent_wallet").doNothing())
          .execute();
        const recorded = statusOf((await read(agentWallet))!);
        if (recorded.state === "pending" && !stopped) void attempt(agentWallet);
        return recorded;
      } catch (error) {
        options.logger?.warn({ agent: request.agentWallet, err: error }, "identity mint not recorded");
        return undefined;
      }
    },

    /** The record of an agent's mint, if one was requested. */
    async status(agentWallet: string): Promise<MintStatus | undefined> {
      const row = await read(agentWallet);
      return row && statusOf(row);
    },

    /** Waits for the agent's running attempt, if any (tests; a deploy never waits). */
    async settled(agentWallet: string): Promise<MintStatus | undefined> {
      await running.get(agentWallet);
      return this.status(agentWallet);
    },

    runDue,

    /** Looks for due retries every `pollMs` until stopped. */
    start() {
      stopped = false;
      schedule();
    },

    /** Stops looking for retries and waits for the attempts under way. */
    async stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      await sweeping;
      await Promise.all(running.values());
    },
  };
}

import { Wallet, getAddress } from "ethers";
import type { ChainRegistry } from "../chains";
import { isUniqueViolation, type Db } from "../db";
import { TaskEscrow__factory } from "../../typechain-types/factories/contracts/TaskEscrow__factory";

class TopUpReverted extends Error {}
/** A claim without a transaction this old was abandoned (sending takes at most the queue and a receipt's wait). */
const ABANDONED_CLAIM_MS = 10 * 60_000;

/** Gas estimate times this margin, at the current max fee, is what a top-up covers. */
const MARGIN = 2n;

export type SponsorState = "active" | "paused" | "unconfigured";

export interface SponsorOutcome {
  sponsored: boolean;
  /**
   * Why not: `paused`, `not_needed`, `not_sponsored_call`, `exported`, `used` (a top-up for this purpose was mined),
   * `pending` (one is being sent or awaits its receipt), `failed` (this one was not sent or reverted: a later call may
   * try again).
   */
  reason?: string;
  txHash?: string;
}

export type GasSponsor = ReturnType<typeof createGasSponsor>;

/**
 * Sponsored gas for hosted agents (spec "Limits", Gas): the service tops up an agent wallet's native balance for its
 * first `submitEvidence` and for each `releaseUnjudgedWork`, each purpose at most once (a unique row per wallet and
 * purpose), never for a wallet whose key was exported. Only a top-up sent and mined uses its purpose up: one that could
 * not be sent, or reverted, leaves no row, and one sent whose receipt was not seen is looked at again on the next call. A switch, paused by default (`MARKET_GAS_SPONSOR=on`).
 */
export function createGasSponsor(deps: {
  db: Db;
  chains: ChainRegistry;
  mode: "on" | "paused";
  privateKey?: string;
  now: () => number;
  logger?: { warn(obj: object, msg: string): void };
}) {
  const { db, chains, now } = deps;
  const address = deps.privateKey ? new Wallet(deps.privateKey).address : null;
  let queue: Promise<unknown> = Promise.resolve();

  function state(): SponsorState {
    if (!deps.privateKey) return "unconfigured";
    return deps.mode === "on" ? "active" : "paused";
  }

  /** The purpose a call is sponsored for, or undefined when it is not a sponsored call. */
  function purposeOf(data: string): string | undefined {
    try {
      const call = TaskEscrow__factory.createInterface().parseTransaction({ data });
      if (call?.name === "submitEvidence") return "first-evidence";
      if (call?.name === "releaseUnjudgedWork") return `release:${String(call.args[0]).toLowerCase()}`;
    } catch {
      return undefined;
    }
    return undefined;
  }

  /** Tops the agent up for this call when it is a sponsored one, the switch is on and its purpose is unused. */
  async function topUp(tx: { chain: string; from: string; to: string; data: string }): Promise<SponsorOutcome> {
    if (state() !== "active") return { sponsored: false, reason: "paused" };
    const chain = chains.get(tx.chain);
    const purpose = purposeOf(tx.data);
    if (!chain || purpose === undefined || getAddress(tx.to) !== chain.config.escrow) return { sponsored: false, reason: "not_sponsored_call" };
    const agent = getAddress(tx.from);
    const hosted = await db.selectFrom("hosted_agents").select(["exported_at"]).where("address", "=", agent).executeTakeFirst();
    if (!hosted) return { sponsored: false, reason: "not_sponsored_call" };
    if (hosted.exported_at !== null) return { sponsored: false, reason: "exported" };
    const provider = chain.provider;
    const earlier = await db
      .selectFrom("gas_sponsorships")
      .select(["id", "status", "tx_hash", "created_at"])
      .where("chain", "=", chain.name)
      .where("agent_address", "=", agent)
      .where("purpose", "=", purpose)
      .executeTakeFirst();
    if (earlier?.status === "sent") return { sponsored: false, reason: "used" };
    if (earlier?.status === "sending") {
      // Another top-up for this purpose is being sent, or was sent and not seen mined: it counts once it is mined.
      // A claim with no transaction long after it was made was never sent (the process ended before sending).
      if (earlier.tx_hash === null && now() - earlier.created_at < ABANDONED_CLAIM_MS) return { sponsored: false, reason: "pending" };
      const receipt = earlier.tx_hash === null ? null : await provider.getTransactionReceipt(earlier.tx_hash);
      if (receipt?.status === 1) {
        await db.updateTable("gas_sponsorships").set({ status: "sent" }).where("id", "=", earlier.id).execute();
        return { sponsored: false, reason: "used" };
      }
      if (!receipt && earlier.tx_hash !== null && (await provider.getTransaction(earlier.tx_hash))) return { sponsored: false, reason: "pending" };
      // Reverted, or dropped by the node: it paid nothing, so the purpose is free again.
    }
    // A failed or dropped top-up never counts as used: its row goes, and this call may send again.
    if (earlier) await db.deleteFrom("gas_sponsorships").where("id", "=", earlier.id).where("status", "!=", "sent").execute();
    const gas = await provider.estimateGas({ from: agent, to: tx.to, data: tx.data });
    const fees = await provider.getFeeData();
    const need = gas * (fees.maxFeePerGas ?? fees.gasPrice ?? 0n) * MARGIN;
    const balance = await provider.getBalance(agent);
    if (balance >= need) return { sponsored: false, reason: "not_needed" };
    const amount = need - balance;
    // The row claims the purpose while the top-up is sent (a unique row per wallet and purpose): a concurrent call
    // answers `pending`.
    let claim: number;
    try {
      claim = (
        await db
          .insertInto("gas_sponsorships")
          .values({
            chain: chain.name,
            agent_address: agent,
            purpose,
            amount: amount.toString(),
            tx_hash: null,
            status: "sending",
            created_at: now(),
          })
          .returning("id")
          .executeTakeFirstOrThrow()
      ).id;
    } catch (error) {
      if (isUniqueViolation(error)) return { sponsored: false, reason: "pending" };
      throw error;
    }
    const claimed = (fields: { tx_hash?: string; status?: "sent" }) =>
      db.updateTable("gas_sponsorships").set(fields).where("id", "=", claim).execute();
    /** Whether the top-up was broadcast: after that, only a receipt tells whether it paid. */
    let broadcast = false;
    // One transfer at a time: the sponsor wallet's nonces follow each other.
    const send = queue.then(async () => {
      const signer = new Wallet(deps.privateKey!, provider);
      const sent = await signer.sendTransaction({ to: agent, value: amount });
      broadcast = true;
      await claimed({ tx_hash: sent.hash });
      const receipt = await sent.wait(1, 120_000);
      if (receipt?.status !== 1) throw new TopUpReverted(`the top-up ${sent.hash} reverted`);
      return sent.hash;
    });
    queue = send.catch(() => undefined);
    try {
      const txHash = await send;
      await claimed({ status: "sent" });
      return { sponsored: true, txHash };
    } catch (error) {
      deps.logger?.warn({ agent, purpose, err: { message: (error as Error).message } }, "gas sponsor: top-up failed");
      if (broadcast && !(error instanceof TopUpReverted)) {
        // Sent, its receipt not seen (a timeout, the node gone): it stays claimed, and counts once it is seen mined.
        return { sponsored: false, reason: "pending" };
      }
      // Never sent, or reverted: it paid nothing, so it does not use the purpose up.
      await db.deleteFrom("gas_sponsorships").where("id", "=", claim).execute();
      return { sponsored: false, reason: "failed" };
    }
  }

  /**
   * Whether the sponsor would pay this agent's first evidence on the chain: the switch is on, its key was never
   * exported, and that top-up is not used yet (the runner then lets an agent without gas accept a task).
   */
  async function coversFirstEvidence(chainName: string, agentAddress: string): Promise<boolean> {
    if (state() !== "active" || !chains.get(chainName)) return false;
    const agent = getAddress(agentAddress);
    const hosted = await db.selectFrom("hosted_agents").select(["exported_at"]).where("address", "=", agent).executeTakeFirst();
    if (!hosted || hosted.exported_at !== null) return false;
    const used = await db
      .selectFrom("gas_sponsorships")
      .select("status")
      .where("chain", "=", chainName)
      .where("agent_address", "=", agent)
      .where("purpose", "=", "first-evidence")
      .executeTakeFirst();
    return used?.status !== "sent";
  }

  return { state, address, topUp, purposeOf, coversFirstEvidence };
}

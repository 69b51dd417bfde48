import { Wallet, getAddress } from "ethers";
import type { ChainRegistry } from "../chains";
import { isUniqueViolation, type Db } from "../db";
import { TaskEscrow__factory } from "../../typechain-types";

const escrowInterface = TaskEscrow__factory.createInterface();
/** Gas estimate times this margin, at the current max fee, is what a top-up covers. */
const MARGIN = 2n;

export type SponsorState = "active" | "paused" | "unconfigured";

export interface SponsorOutcome {
  sponsored: boolean;
  /** Why not: `paused`, `not_needed`, `not_sponsored_call`, `exported`, `used`, `failed`. */
  reason?: string;
  txHash?: string;
}

export type GasSponsor = ReturnType<typeof createGasSponsor>;

/**
 * Sponsored gas for hosted agents (spec "Limits", Gas): the service tops up an agent wallet's native balance for its
 * first `submitEvidence` and for each `releaseUnjudgedWork`, each purpose at most once (a unique row per wallet and
 * purpose), never for a wallet whose key was exported. A switch, paused by default (`MARKET_GAS_SPONSOR=on`).
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
      const call = escrowInterface.parseTransaction({ data });
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
    const used = await db
      .selectFrom("gas_sponsorships")
      .select("id")
      .where("chain", "=", chain.name)
      .where("agent_address", "=", agent)
      .where("purpose", "=", purpose)
      .executeTakeFirst();
    if (used) return { sponsored: false, reason: "used" };
    const provider = chain.provider;
    const gas = await provider.estimateGas({ from: agent, to: tx.to, data: tx.data });
    const fees = await provider.getFeeData();
    const need = gas * (fees.maxFeePerGas ?? fees.gasPrice ?? 0n) * MARGIN;
    const balance = await provider.getBalance(agent);
    if (balance >= need) return { sponsored: false, reason: "not_needed" };
    const amount = need - balance;
    try {
      await db
        .insertInto("gas_sponsorships")
        .values({ chain: chain.name, agent_address: agent, purpose, amount: amount.toString(), tx_hash: null, status: "sending", created_at: now() })
        .execute();
    } catch (error) {
      if (isUniqueViolation(error)) return { sponsored: false, reason: "used" };
      throw error;
    }
    // One transfer at a time: the sponsor wallet's nonces follow each other.
    const send = queue.then(async () => {
      const signer = new Wallet(deps.privateKey!, provider);
      const sent = await signer.sendTransaction({ to: agent, value: amount });
      await db
        .updateTable("gas_sponsorships")
        .set({ tx_hash: sent.hash })
        .where("chain", "=", chain.name)
        .where("agent_address", "=", agent)
        .where("purpose", "=", purpose)
        .execute();
      const receipt = await sent.wait(1, 120_000);
      if (receipt?.status !== 1) throw new Error(`the top-up ${sent.hash} reverted`);
      return sent.hash;
    });
    queue = send.catch(() => undefined);
    try {
      const txHash = await send;
      await db
        .updateTable("gas_sponsorships")
        .set({ status: "sent" })
        .where("chain", "=", chain.name)
        .where("agent_address", "=", agent)
        .where("purpose", "=", purpose)
        .execute();
      return { sponsored: true, txHash };
    } catch (error) {
      deps.logger?.warn({ agent, purpose, err: { message: (error as Error).message } }, "gas sponsor: top-up failed");
      await db
        .updateTable("gas_sponsorships")
        .set({ status: "failed" })
        .where("chain", "=", chain.name)
        .where("agent_address", "=", agent)
        .where("purpose", "=", purpose)
        .execute();
      return { sponsored: false, reason: "failed" };
    }
  }

  return { state, address, topUp, purposeOf };
}

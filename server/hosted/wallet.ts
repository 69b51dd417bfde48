/**
 * A hosted agent's wallet (server/hosted/service.ts binds the operations): its key's export, the hold that lets the
 * service sign from it, and withdrawals to the owner.
 */
import { Contract, Wallet, getAddress } from "ethers";
import { chainCall, chainUnavailable, type Chain } from "../chains";
import type { Principal } from "../auth";
import type { ExportedKey, WithdrawBody, Withdrawal } from "@market/core/api";
import { asAddress, asRawAmount } from "@market/core/api";
import { MarketError } from "@market/core/errors";
import { isNodeRefusal } from "@market/core/revert";
import type { HostedAgent } from "../db/schema";
import { ERC20, type HostedAgentsDeps } from "./agent-deps";
import type { Lifecycle } from "./lifecycle";

/** A withdrawal's receipt is awaited this long before the answer is TX_PENDING. */
const WITHDRAW_WAIT_MS = 60_000;

export function createWalletOperations(deps: HostedAgentsDeps, { lostTransition }: Pick<Lifecycle, "lostTransition">) {
  const { db, store, runners, config, now } = deps;

  /** The wallet key sealed to the owner's public key; every export is recorded first (no record, no key). */
  async function exportKey(principal: Principal, id: number, ip: string | undefined): Promise<ExportedKey> {
    const row = await store.requireOwned(id, principal);
    const sealed = await store.ownerCopy(id, "wallet", "wallet");
    if (!sealed) throw new MarketError("HOSTED_AGENT_NOT_FOUND", "The agent has no custodied wallet key.");
    const at = now();
    let exports: number;
    try {
      exports = await db.transaction().execute(async (trx) => {
        await trx
          .insertInto("key_exports")
          .values({ agent_id: id, account_id: principal.accountId, ip: ip?.slice(0, 64) ?? null, exported_at: at })
          .execute();
        if (row.exported_at === null)
          await trx
            .updateTable("hosted_agents")
            .set({ exported_at: at, updated_at: at })
            .where("id", "=", id)
            .where("exported_at", "is", null)
            .execute();
        const counted = await trx
          .selectFrom("key_exports")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("agent_id", "=", id)
          .executeTakeFirstOrThrow();
        return Number(counted.n);
      });
    } catch (cause) {
      throw new MarketError("KEY_EXPORT_NOT_RECORDED", undefined, { cause });
    }
    return {
      agentId: id,
      address: asAddress(row.address),
      encryptedPrivateKey: sealed,
      ownerPublicKey: row.owner_public_key,
      exportedAt: at,
      exports,
    };
  }

  /**
   * Runs `use` with the stopped agent's wallet held for the service's signature: the agent is held `withdrawing`
   * meanwhile (one state change in the database, seen by every API process), so a start, a withdrawal, a delete or
   * another holder racing it is refused (`WITHDRAWAL_IN_PROGRESS`) instead of signing with the same nonce; a running
   * agent is `AGENT_RUNNING` ("Stop the agent before `what`"). The hold is renewed every third of `walletHoldMs` while
   * `use` runs: one left by a process that died lapses. `keep()` leaves it to lapse instead of releasing it at the end
   * (a sent transaction not confirmed).
   */
  async function holdWallet<T>(
    principal: Principal,
    id: number,
    what: string,
    use: (row: HostedAgent, hold: { keep(): void }) => Promise<T>,
  ): Promise<T> {
    const row = await store.requireOwned(id, principal);
    const running = () => new MarketError("AGENT_RUNNING", `Stop the agent before ${what}.`);
    if (row.state === "running" || runners.isRunning(id)) throw running();
    if (!(await store.transition(id, ["stopped"], "withdrawing"))) {
      const lost = await lostTransition(id);
      throw lost.code === "AGENT_RUNNING" ? running() : lost;
    }
    const renewing = setInterval(() => {
      store.transition(id, ["withdrawing"], "withdrawing").catch(() => undefined);
    }, config.walletHoldMs / 3);
    renewing.unref();
    let release = true;
    try {
      // A run still stopping would sign with the same wallet.
      if (runners.isRunning(id)) throw running();
      return await use(row, { keep: () => void (release = false) });
    } finally {
      clearInterval(renewing);
      if (release) await store.transition(id, ["withdrawing"], "stopped");
    }
  }

  /**
   * Sends the settlement token from the stopped agent's wallet to the owner's address, signed by the service, with the
   * wallet held (`holdWallet`). A sent transfer not confirmed keeps the hold until it lapses.
   */
  async function withdraw(principal: Principal, id: number, body: WithdrawBody): Promise<Withdrawal> {
    await store.requireOwned(id, principal);
    const chain = deps.settlementChain();
    if (body.chain !== undefined && body.chain !== chain.name) {
      throw new MarketError(
        "BRIDGE_UNAVAILABLE",
        `Withdrawals go to the owner's address on ${chain.name}; bridging to ${body.chain} is not offered.`,
      );
    }
    return holdWallet(principal, id, "withdrawing", (row, hold) => transfer(row, chain, body, hold.keep));
  }

  async function transfer(row: HostedAgent, chain: Chain, body: WithdrawBody, sentUnconfirmed: () => void): Promise<Withdrawal> {
    const id = row.id;
    const wallet = new Wallet(await store.openWalletKey(id), chain.provider);
    const token = new Contract(chain.config.token, ERC20, wallet);
    const balance = (await chainCall(() => token.getFunction("balanceOf")(wallet.address))) as bigint;
    const amount = body.amountRaw === undefined ? balance : BigInt(body.amountRaw);
    if (amount === 0n || amount > balance) throw new MarketError("NOTHING_TO_WITHDRAW", `The agent's wallet holds ${balance} raw units.`);
    const to = getAddress(row.owner_address);
    let sent: { hash: string; wait(confirms: number, timeoutMs: number): Promise<{ status: number | null } | null> };
    try {
      sent = await token.getFunction("transfer")(to, amount);
    } catch (error) {
      if (isNodeRefusal(error))
        throw new MarketError("TX_REJECTED", "The node refused the transfer (the agent's wallet cannot pay its gas?); nothing was sent.", {
          cause: error,
        });
      throw chainUnavailable(error, chain.name);
    }
    const txHash = sent.hash;
    let receipt: { status: number | null } | null;
    try {
      receipt = await sent.wait(1, WITHDRAW_WAIT_MS);
    } catch (error) {
      if ((error as { code?: string }).code === "CALL_EXCEPTION")
        throw new MarketError("TX_REVERTED", `The withdrawal ${txHash} reverted.`, { cause: error });
      sentUnconfirmed();
      throw new MarketError("TX_PENDING", `The withdrawal ${txHash} is sent but not confirmed yet.`, {
        details: [{ message: "pending", txHash }],
        cause: error,
      });
    }
    if (receipt?.status !== 1) throw new MarketError("TX_REVERTED", `The withdrawal ${txHash} reverted.`);
    return {
      agentId: id,
      chain: chain.name,
      from: asAddress(wallet.address),
      to: asAddress(to),
      token: asAddress(chain.config.token),
      amount: asRawAmount(amount),
      txHash,
    };
  }

  return { exportKey, holdWallet, withdraw };
}

import { getAddress, id as topicOf, AbiCoder } from "ethers";
import { chainCall, type Chain } from "../chains";
import type { Db } from "../db";
import { MarketError } from "@market/core/errors";
import { asAddress, asRawAmount, type DeployFeeTerms } from "@market/core/api";

const TRANSFER_TOPIC = topicOf("Transfer(address,address,uint256)");
/** The escrow's treasury is read again after this long. */
const TREASURY_TTL_MS = 60_000;

export type FeeRefusal = "FEE_TX_MISSING" | "NOT_CONFIRMED" | "REVERTED" | "WRONG_RECIPIENT" | "PAYER_NOT_LINKED" | "TOO_SMALL" | "ALREADY_CREDITED";

export const feeRefused = (reason: FeeRefusal, message: string) => new MarketError("DEPLOY_FEE_NOT_PAID", message, { reason });

export interface VerifiedFee {
  txHash: string;
  payer: string;
  amount: bigint;
}

export type DeployFees = ReturnType<typeof createDeployFees>;

/**
 * The deploy fee: a settlement-token transfer of at least the configured amount to the treasury (the escrow's
 * `treasury()`) on the settlement chain, from a wallet linked to the deploying account, confirmed, not reverted, and
 * credited to one deploy only (the caller inserts the credit row in the deploy's transaction; its primary key makes a
 * second credit fail even when two deploys race).
 */
export function createDeployFees({ db, chain, amount, now }: { db: Db; chain: () => Chain; amount: bigint; now: () => number }) {
  let treasury: { address: string; at: number } | undefined;

  async function treasuryAddress(): Promise<string> {
    const at = now();
    if (!treasury || at - treasury.at > TREASURY_TTL_MS) {
      const address = await chainCall(() => chain().escrow.treasury());
      treasury = { address: getAddress(address), at };
    }
    return treasury.address;
  }

  async function terms(): Promise<DeployFeeTerms> {
    const settlement = chain();
    return {
      chain: settlement.name,
      amount: asRawAmount(amount),
      token: asAddress(settlement.config.token),
      recipient: asAddress(await treasuryAddress()),
      required: amount > 0n,
    };
  }

  async function verify(txHash: string | undefined, accountId: number): Promise<VerifiedFee | undefined> {
    if (amount === 0n) return undefined;
    if (!txHash)
      throw feeRefused("FEE_TX_MISSING", `Deploying costs ${amount} raw units of the settlement token: pay the treasury and send feeTxHash.`);
    const hash = txHash.toLowerCase();
    const settlement = chain();
    const receipt = await chainCall(() => settlement.provider.getTransactionReceipt(hash));
    if (!receipt) throw feeRefused("NOT_CONFIRMED", "The fee transaction is not mined (or not seen yet); retry once it is.");
    const head = await chainCall(() => settlement.provider.getBlockNumber());
    if (head - receipt.blockNumber < settlement.config.confirmations)
      throw feeRefused("NOT_CONFIRMED", "The fee transaction has too few confirmations yet; retry shortly.");
    if (receipt.status !== 1) throw feeRefused("REVERTED", "The fee transaction reverted.");
    const recipient = await treasuryAddress();
    const coder = AbiCoder.defaultAbiCoder();
    const transfers = receipt.logs
      .filter((log) => getAddress(log.address) === settlement.config.token && log.topics[0] === TRANSFER_TOPIC && log.topics.length === 3)
      .map((log) => ({
        from: getAddress(coder.decode(["address"], log.topics[1]!)[0] as string),
        to: getAddress(coder.decode(["address"], log.topics[2]!)[0] as string),
        value: coder.decode(["uint256"], log.data)[0] as bigint,
      }))
      .filter((t) => t.to === recipient);
    if (transfers.length === 0)
      throw feeRefused("WRONG_RECIPIENT", `The transaction carries no settlement-token transfer to the treasury ${recipient}.`);
    const linked = new Set(
      (await db.selectFrom("account_wallets").select("address").where("account_id", "=", accountId).execute()).map((w) => w.address),
    );
    const fromLinked = transfers.filter((t) => linked.has(t.from));
    if (fromLinked.length === 0)
      throw feeRefused("PAYER_NOT_LINKED", `The fee was paid from ${transfers[0]!.from}, a wallet not linked to this account; link it first.`);
    const paid = fromLinked.reduce((sum, t) => sum + t.value, 0n);
    if (paid < amount) throw feeRefused("TOO_SMALL", `The transfer is ${paid} raw units; the deploy fee is ${amount}.`);
    const credited = await db
      .selectFrom("deploy_fee_credits")
      .select("agent_id")
      .where("chain", "=", settlement.name)
      .where("tx_hash", "=", hash)
      .executeTakeFirst();
    if (credited) throw feeRefused("ALREADY_CREDITED", "This fee transaction already paid for another deploy.");
    return { txHash: hash, payer: fromLinked[0]!.from, amount: paid };
  }

  return { terms, verify, chainName: () => chain().name };
}

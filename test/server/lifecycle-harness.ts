/** Agent- and poster-side steps of the task life cycle through the API, for lifecycle tests. */
import { expect } from "chai";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { TestServer } from "./harness";
import { expectOk } from "./expect";
import { sweepFeesToTreasury } from "../support/fees";
import type { Assigned, Delivered, Finalized, SettlementTx, TaskView, UnsignedTx } from "@market/core/api";

export type { Finalized } from "@market/core/api";

export function lifecycle(s: TestServer) {
  /** Signs and sends an API-built transaction from `signer`; waits for the indexer. */
  async function sign(signer: HardhatEthersSigner, tx: Pick<UnsignedTx, "to" | "data">): Promise<string> {
    const sent = await signer.sendTransaction({ to: tx.to, data: tx.data });
    await sent.wait();
    await s.sync();
    return sent.hash;
  }

  const accept = (key: string, taskHash: string) => s.call<Assigned>("POST", `/api/v1/a2a/tasks/${taskHash}/accept`, { key });

  /** Delivers `output` as `agent`: stores it, signs the evidence transaction, and finalizes. */
  async function deliverAndFinalize(agent: HardhatEthersSigner, key: string, taskHash: string, output: string): Promise<Finalized> {
    const delivered = expectOk(await s.call<Delivered>("POST", `/api/v1/a2a/tasks/${taskHash}/deliver`, { key, body: { output } }));
    const txHash = await sign(agent, delivered.unsignedTx);
    return expectOk(await s.call<Finalized>("POST", `/api/v1/a2a/tasks/${taskHash}/finalize`, { key, body: { txHash } }));
  }

  /** Runs a settlement action (`cancel`, `claim-timeout`, ...) as `signer` and sends its transaction. */
  async function settle(signer: HardhatEthersSigner, key: string, taskHash: string, action: string, outcome?: string): Promise<string> {
    const answer = expectOk(await s.call<SettlementTx>("POST", `/api/v1/a2a/tasks/${taskHash}/${action}`, { key }));
    if (outcome) expect(answer.outcome).to.equal(outcome);
    return sign(signer, answer.unsignedTx);
  }

  async function status(taskHash: string): Promise<string> {
    return expectOk(await s.call<TaskView>("GET", `/api/v1/tasks/${taskHash}`)).state.status;
  }

  async function balances(...accounts: string[]) {
    await sweepFeesToTreasury(s);
    return Promise.all([...accounts, s.escrowAddress].map((a) => s.usdc.balanceOf(a)));
  }

  return { sign, accept, deliverAndFinalize, settle, status, balances };
}

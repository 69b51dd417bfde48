/**
 * Steps shared by the life-cycle tests (test/server/lifecycle/*.test.ts): the task's three views (API status, the
 * indexer's escrow_tasks row, token balances), deliveries that stop short of finalizing, signing API-built
 * transactions, and moving chain time.
 */
import { expect } from "chai";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { privateKeyOf, serverFixture, type TestServer } from "../harness";
import type { Chain } from "../../../server/chains";
import { createOutbox, type Outbox, type OutboxOptions } from "../../../server/outbox";
import { lifecycle, type Finalized } from "../lifecycle-harness";
import { expectOk } from "../expect";
import { Ending, EscrowStatus } from "@market/core/escrow";
import type { Assigned, Delivered, PostedAnswer, SettlementTx } from "@market/core/api";

export const DAY = 86_400;
/** An odd reward, so the 10% fee rounds down: fee 500,000, payout 4,500,003. */
export const AMOUNT = 5_000_003n;
export const FEE = (AMOUNT * 1_000n) / 10_000n;
export const PAYOUT = AMOUNT - FEE;

export const PASSING = "Prince Hamlet seeks revenge on his uncle Claudius, who murdered his father and married his mother.";
export const FAILING = "Too short.";
/** Criteria that PASSING meets and FAILING does not. */
export const CRITERIA = { min_length: 40, contains_keywords: ["Hamlet"] };

export type { UnsignedTx } from "@market/core/api";

export interface Balances {
  poster: bigint;
  worker: bigint;
  treasury: bigint;
  escrow: bigint;
}

let briefs = 0;
/** A public brief no other test uses (a public brief's hash is reserved marketplace-wide). */
export function brief(what = "Summarise the plot of Hamlet in one paragraph."): string {
  briefs += 1;
  return `${what} (#${briefs}, ${Date.now()})`;
}

export function steps(s: TestServer) {
  const l = lifecycle(s);

  /** A public task with a fresh brief, funded and listed by the poster: `auto` with CRITERIA, or `manual`. */
  const postPublic = (posterKey: string, mode: "auto" | "manual" = "auto") =>
    s.post(
      s.poster,
      posterKey,
      s.publicTask(brief(), mode === "auto" ? { verificationCriteria: CRITERIA } : { verificationMode: "manual", verificationCriteria: undefined }),
      AMOUNT,
    );

  /** POST .../accept, answered with the whole assignment. */
  const accept = (key: string, taskHash: string) => s.call<Assigned>("POST", `/api/v1/a2a/tasks/${taskHash}/accept`, { key });

  async function escrowRow(taskHash: string) {
    return s.db
      .selectFrom("escrow_tasks")
      .select(["status", "ending", "worker", "rounds", "phase_at", "deadline"])
      .where("chain", "=", "arc")
      .where("task_hash", "=", taskHash.toLowerCase())
      .executeTakeFirstOrThrow();
  }

  /** The API status and the indexer's status and ending, checked together. */
  async function expectState(taskHash: string, apiStatus: string, status: number, ending: number = Ending.None) {
    expect(await l.status(taskHash), "API status").to.equal(apiStatus);
    const row = await escrowRow(taskHash);
    expect(row.status, "escrow_tasks.status").to.equal(status);
    expect(row.ending, "escrow_tasks.ending").to.equal(ending);
  }

  /** Delivered, finalized and waiting for the poster's or the verifier's verdict. */
  async function expectAwaitingVerdict(taskHash: string) {
    expect(await l.status(taskHash), "API status").to.equal("awaiting_verification");
    const row = await escrowRow(taskHash);
    expect([row.status, row.ending], "escrow_tasks status, ending").to.deep.equal([EscrowStatus.Submitted, Ending.None]);
  }

  async function balances(worker: HardhatEthersSigner = s.worker): Promise<Balances> {
    const [poster, workerBalance, treasury, escrow] = await l.balances(s.poster.address, worker.address, s.treasury.address);
    return { poster: poster!, worker: workerBalance!, treasury: treasury!, escrow: escrow! };
  }

  /** Stores `output` as the next round and answers the submitEvidence transaction, unsent. */
  async function deliver(key: string, taskHash: string, output: string) {
    return expectOk(await s.call<Delivered>("POST", `/api/v1/a2a/tasks/${taskHash}/deliver`, { key, body: { output } }));
  }

  /** Delivers and sends the evidence from the agent's wallet, without finalizing. */
  async function deliverOnChain(agent: HardhatEthersSigner, key: string, taskHash: string, output: string): Promise<string> {
    const delivered = await deliver(key, taskHash, output);
    return l.sign(agent, delivered.unsignedTx);
  }

  function finalize(key: string, taskHash: string, txHash?: string) {
    return s.call<Finalized>("POST", `/api/v1/a2a/tasks/${taskHash}/finalize`, { key, body: txHash ? { txHash } : {} });
  }

  /** A settlement action's answer (`cancel`, `claim-timeout`, `dispute`, `release-unjudged`, `release`), unsent. */
  function action(key: string, taskHash: string, name: string) {
    return s.call<SettlementTx>("POST", `/api/v1/a2a/tasks/${taskHash}/${name}`, { key });
  }

  /** Signs the API-built transaction with the signer's own key (nonce, gas and fees filled in), unsent. */
  async function signRaw(signer: HardhatEthersSigner, tx: { to: string; data: string }, overrides: Record<string, unknown> = {}): Promise<string> {
    const wallet = new hre.ethers.Wallet(privateKeyOf(signer), hre.ethers.provider);
    const populated = await wallet.populateTransaction({ to: tx.to, data: tx.data, gasLimit: 300_000n, ...overrides });
    return wallet.signTransaction(populated);
  }

  /** Moves chain time forward, mines, and lets the indexer and the API clock catch up. */
  async function travel(seconds: number) {
    await time.increase(seconds);
    await s.sync();
  }

  /** The caller's posted task as GET /api/v1/a2a/tasks/posted shows it. */
  async function posted(key: string, taskHash: string) {
    const page = expectOk(await s.call<PostedAnswer>("GET", "/api/v1/a2a/tasks/posted", { key }));
    const task = page.tasks.find((t) => t.meta.taskHash === taskHash.toLowerCase());
    expect(task, `posted task ${taskHash}`).to.not.equal(undefined);
    return task!;
  }

  return {
    ...l,
    postPublic,
    accept,
    escrowRow,
    expectState,
    expectAwaitingVerdict,
    balances,
    deliver,
    deliverOnChain,
    finalize,
    action,
    signRaw,
    travel,
    posted,
  };
}

export type Steps = ReturnType<typeof steps>;

/** Starts the server and the usual parties: an agent (worker) with `summarization` and a poster key. */
export async function parties(s: TestServer, capabilities: string[] = ["summarization"]) {
  const agentKey = await s.registerAgent(s.worker, capabilities);
  const posterKey = await s.apiKeyFor(s.poster);
  return { agentKey, posterKey };
}

/** A server where the worker is registered (`summarization`) and the poster has a key: `seeded` holds both keys. */
export const partiesServer = serverFixture((s) => parties(s));

/** The same, with the stranger registered too (`summarization`): a second agent that is not the task's worker. */
export const partiesAndStrangerServer = serverFixture(async (s) => ({
  ...(await parties(s)),
  strangerKey: await s.registerAgent(s.stranger, ["summarization"]),
}));

/** Statuses by name, for readable expectations. */
export { EscrowStatus, Ending };

/** Tasks funded directly on the escrow by the poster (not listed): what the verifier key's outbox assigns. */
export async function fundedTasks(s: TestServer, count: number, label: string): Promise<string[]> {
  const hashes: string[] = [];
  for (let i = 0; i < count; i++) {
    const hash = hre.ethers.id(`${label} task ${i} ${Date.now()} ${Math.random()}`);
    await (await s.escrow.connect(s.poster).createTask(hash, s.token, AMOUNT, DAY, hre.ethers.ZeroAddress)).wait();
    hashes.push(hash);
  }
  return hashes;
}

/** Another outbox of the server's verifier key over its database (another process's, as far as the table knows). */
export function verifierOutbox(s: TestServer, chain: Chain, options: Partial<OutboxOptions> = {}): Outbox {
  return createOutbox({
    db: s.db,
    chain,
    signer: new hre.ethers.Wallet(privateKeyOf(s.verifier), hre.ethers.provider),
    now: Date.now,
    pollMs: 20,
    ...options,
  });
}

/** The escrow call assigning `taskHash` to the server's worker (what an accept sends). */
export const assignCall = (s: TestServer, taskHash: string) =>
  s.escrow.interface.encodeFunctionData("marketplaceAssign", [taskHash, s.worker.address]);

/** The verifier key's mined transaction count. */
export const verifierNonce = (s: TestServer) => hre.ethers.provider.getTransactionCount(s.verifier.address, "latest");

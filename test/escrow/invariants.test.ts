/**
 * Property test: random sequences of every escrow operation by every actor over many tasks, with time jumps, pauses,
 * blocked recipients and stray tokens, checked step by step against the reference model in ./model.ts and against
 * the TypeScript rules of core/escrow.
 *
 * After every step: the call reverted exactly when the model says it is illegal, with the error the model names;
 * every task call did exactly what core/escrow's precondition predicted from the task as `getTask` reports it: success
 * (with the claim's outcome, the round, the disputant and the payout split it names), or the custom error with its
 * arguments; core/escrow's decoder and fold of the escrow's own logs read as `getTask` (every live task before each
 * call to it, the touched task after it, every task every 25 steps), and the escrow-wide state as its views; a legal
 * call emitted exactly the events the model expects; the escrow holds exactly what it owes (live task amounts plus
 * credits, plus any stray surplus) in each token; no task ended twice; the touched task reads as the model says.
 * Every 25 steps and at the end of a run: every task, every credit and every tracked balance.
 *
 * Reproduce a failure with the seed (and path) it prints: FC_SEED=<seed> FC_PATH=<path> npx hardhat test <this file>.
 * FC_RUNS and FC_STEPS change the size (default 5 runs of 400 steps).
 */
import { expect } from "chai";
import fc from "fast-check";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { ContractTransactionReceipt, ContractTransactionResponse } from "ethers";
import { Ending, propertyFixture } from "../fixtures/escrow";
import {
  applyStateEvent,
  applyTaskEvent,
  canAssign,
  canCancel,
  canClaim,
  canDeliver,
  canDispute,
  canRelease,
  canReleaseUnjudged,
  canResolve,
  canVerify,
  decodeEscrowLog,
  endingName,
  payoutSplit,
  shiftForPause,
  snapshotFromView,
  snapshotOf,
  STATUSES_FOR,
  type Check,
  type EscrowLog,
  type EscrowState,
  type ProjectedTask,
  type TaskCall,
  type TaskSnapshot,
} from "@market/core/escrow";
import { APPEAL_WINDOW, EscrowModel, RULING_WINDOW, type ExpectedEvent, type ModelTask, type Outcome } from "./model";

const { ethers } = hre;
const ZERO = ethers.ZeroAddress;
const DAY = 86_400n;
const SLOTS = 10;
const RUNS = Number(process.env.FC_RUNS ?? 5);
const STEPS = Number(process.env.FC_STEPS ?? 400);
const FULL_CHECK_EVERY = 25;
const ENDING_EVENTS = new Set(["TaskCompleted", "TaskCancelled", "DeadlineExpired", "TaskRefunded"]);

// ------------------------------------------------------------------ commands

type Role = "poster" | "otherPoster" | "worker" | "otherWorker" | "judge" | "marketplace" | "agent" | "admin" | "stranger";
type TokenName = "usdc" | "blocklist" | "unlisted";
type WorkerChoice = "worker" | "worker2" | "stranger" | "poster" | "agent" | "zero";
type Account = "poster" | "poster2" | "worker" | "worker2" | "treasury" | "stranger";
/**
 * Which task a call aims at: one whose status the call expects, one of the live tasks, one of all tasks funded so
 * far, or a hash never funded. Resolved when the step runs, so most calls meet a task they can act on.
 */
interface Target {
  scope: "fitting" | "live" | "any" | "unknown";
  pick: number;
}

type Command =
  | {
      kind: "create";
      slot: number;
      actor: Role;
      token: TokenName;
      amount: bigint;
      duration: bigint;
      judge: "none" | "agent" | "self";
      reuse: boolean;
    }
  | {
      kind: "createBatch";
      slots: number[];
      actor: Role;
      token: TokenName;
      amounts: bigint[];
      duration: bigint;
      mismatch: boolean;
    }
  | { kind: "cancel" | "dispute" | "claim" | "release" | "handBack"; task: Target; actor: Role }
  | { kind: "assign" | "marketAssign"; task: Target; actor: Role; worker: WorkerChoice }
  | { kind: "submit"; task: Target; actor: Role; zeroHash: boolean }
  | { kind: "verify"; task: Target; actor: Role; passed: boolean; score: number }
  | { kind: "resolve"; task: Target; actor: Role; workerWins: boolean }
  | { kind: "withdraw"; account: Account; token: TokenName }
  | { kind: "sweep"; actor: Role | "treasury"; token: TokenName }
  | { kind: "block"; account: Account; blocked: boolean }
  | { kind: "wait"; seconds: bigint }
  | { kind: "pause" | "unpause"; actor: Role }
  | { kind: "setFee"; actor: Role; fee: bigint }
  | { kind: "allowToken"; actor: Role; token: TokenName; allowed: boolean }
  | { kind: "stray"; token: TokenName; amount: bigint }
  | { kind: "rescue"; actor: Role; token: TokenName; amount: "surplus" | "more" | "one"; to: "admin" | "stranger" };

type TaskCommand = "cancel" | "assign" | "marketAssign" | "submit" | "verify" | "dispute" | "resolve" | "claim" | "release" | "handBack";
/** The escrow function each task command calls. */
const CALLS: Record<TaskCommand, TaskCall> = {
  cancel: "cancelTask",
  assign: "assignWorker",
  marketAssign: "marketplaceAssign",
  submit: "submitEvidence",
  verify: "completeVerification",
  dispute: "raiseDispute",
  resolve: "resolveDispute",
  claim: "claimTimeout",
  release: "releaseUnjudgedWork",
  handBack: "releaseTask",
};

const ALL_ROLES: Role[] = ["poster", "otherPoster", "worker", "otherWorker", "judge", "marketplace", "agent", "admin", "stranger"];
/** Mostly the role the rules expect, sometimes anyone. */
const roleFor = (main: Role) => fc.oneof({ arbitrary: fc.constant(main), weight: 6 }, { arbitrary: fc.constantFrom(...ALL_ROLES), weight: 1 });
const slot = fc.integer({ min: 0, max: SLOTS - 1 });
const target: fc.Arbitrary<Target> = fc.record({
  scope: fc.oneof(
    { arbitrary: fc.constant("fitting" as const), weight: 10 },
    { arbitrary: fc.constant("live" as const), weight: 4 },
    { arbitrary: fc.constant("any" as const), weight: 2 },
    { arbitrary: fc.constant("unknown" as const), weight: 1 },
  ),
  pick: fc.nat(1_000),
});
const taskToken = fc.oneof(
  { arbitrary: fc.constant<TokenName>("usdc"), weight: 5 },
  { arbitrary: fc.constant<TokenName>("blocklist"), weight: 5 },
  { arbitrary: fc.constant<TokenName>("unlisted"), weight: 1 },
);
const amount = fc.oneof(
  { arbitrary: fc.constant(0n), weight: 1 },
  { arbitrary: fc.constantFrom(1n, 7n, 999n, 10_000_001n, 123_456_789n), weight: 10 },
  { arbitrary: fc.bigInt(1n, 10n ** 9n), weight: 5 },
);
const duration = fc.oneof(
  { arbitrary: fc.constantFrom(3_599n, 7_776_001n), weight: 1 },
  { arbitrary: fc.constantFrom(3_600n, DAY, 3n * DAY, 10n * DAY, 10n * DAY, 20n * DAY, 7_776_000n), weight: 12 },
);
const account = fc.constantFrom<Account>("poster", "poster2", "worker", "worker2", "treasury", "stranger");

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("create" as const),
      slot,
      actor: fc.constantFrom<Role>("poster", "poster", "poster", "otherPoster", "otherPoster", "stranger"),
      token: taskToken,
      amount,
      duration,
      judge: fc.constantFrom<"none" | "agent" | "self">("none", "none", "none", "agent", "agent", "self"),
      reuse: fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("createBatch" as const),
      slots: fc.array(slot, { minLength: 1, maxLength: 3 }),
      actor: fc.constantFrom<Role>("poster", "otherPoster"),
      token: taskToken,
      amounts: fc.array(amount, { minLength: 3, maxLength: 3 }),
      duration,
      mismatch: fc.oneof({ arbitrary: fc.constant(false), weight: 6 }, { arbitrary: fc.constant(true), weight: 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), task: target, actor: roleFor("poster") }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("assign" as const),
      task: target,
      actor: roleFor("poster"),
      worker: fc.constantFrom<WorkerChoice>("worker", "worker", "worker2", "worker2", "stranger", "poster", "agent", "zero"),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("marketAssign" as const),
      task: target,
      actor: roleFor("marketplace"),
      worker: fc.constantFrom<WorkerChoice>("worker", "worker", "worker2", "worker2", "stranger", "poster", "agent", "zero"),
    }),
  },
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant("submit" as const),
      task: target,
      actor: roleFor("worker"),
      zeroHash: fc.oneof({ arbitrary: fc.constant(false), weight: 15 }, { arbitrary: fc.constant(true), weight: 1 }),
    }),
  },
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant("verify" as const),
      task: target,
      actor: roleFor("judge"),
      passed: fc.boolean(),
      score: fc.constantFrom(0, 42, 100, 100, 101),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("dispute" as const),
      task: target,
      actor: fc.constantFrom<Role>("poster", "worker", "worker", "stranger", "judge"),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("resolve" as const),
      task: target,
      actor: roleFor("admin"),
      workerWins: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("claim" as const), task: target, actor: roleFor("poster") }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("release" as const), task: target, actor: roleFor("worker") }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("handBack" as const), task: target, actor: roleFor("worker") }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("withdraw" as const),
      account,
      token: fc.constantFrom<TokenName>("blocklist", "blocklist", "usdc"),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("block" as const), account, blocked: fc.boolean() }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("wait" as const),
      seconds: fc.oneof(
        { arbitrary: fc.constantFrom(1n, 60n, 3_600n, 6n * 3_600n, DAY), weight: 8 },
        { arbitrary: fc.constantFrom(APPEAL_WINDOW - 1n, APPEAL_WINDOW, RULING_WINDOW - 1n, RULING_WINDOW), weight: 2 },
        { arbitrary: fc.bigInt(1n, 15n * DAY), weight: 1 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("pause" as const), actor: roleFor("admin") }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("unpause" as const), actor: roleFor("admin") }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("setFee" as const),
      actor: roleFor("admin"),
      fee: fc.constantFrom(0n, 1n, 1000n, 2500n, 3000n, 3001n),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("allowToken" as const),
      actor: roleFor("admin"),
      token: fc.constantFrom<TokenName>("usdc", "blocklist"),
      allowed: fc.oneof({ arbitrary: fc.constant(true), weight: 2 }, { arbitrary: fc.constant(false), weight: 1 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("sweep" as const),
      actor: fc.oneof({ arbitrary: fc.constant<"treasury">("treasury"), weight: 4 }, { arbitrary: fc.constantFrom(...ALL_ROLES), weight: 1 }),
      token: fc.constantFrom<TokenName>("usdc", "blocklist"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("stray" as const),
      token: fc.constantFrom<TokenName>("usdc", "blocklist"),
      amount: fc.bigInt(1n, 1_000n),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("rescue" as const),
      actor: roleFor("admin"),
      token: fc.constantFrom<TokenName>("usdc", "blocklist"),
      amount: fc.constantFrom("surplus" as const, "more" as const, "one" as const),
      to: fc.constantFrom("admin" as const, "stranger" as const),
    }),
  },
);

// ------------------------------------------------------------------ driver

type Ctx = Awaited<ReturnType<typeof propertyFixture>>;

/** Numbers and bigints compare as bigints; everything else as is. */
const normalize = (value: unknown): unknown => (typeof value === "number" ? BigInt(value) : Array.isArray(value) ? value.map(normalize) : value);
const normalizeArgs = (args: Record<string, unknown>) => Object.fromEntries(Object.entries(args).map(([name, value]) => [name, normalize(value)]));

/**
 * chai's deep equality, asked only when a cheap comparison finds a difference: over thousands of checks per run it
 * costs more than the chain. Values of the same shape serialize alike (bigints marked, so 1 and 1n differ).
 */
const serialize = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
function expectSame(actual: unknown, expected: unknown, message: string) {
  if (serialize(actual) !== serialize(expected)) expect(actual, message).to.deep.equal(expected);
}

/** A custom error as the escrow raised it: its name and its arguments by name. */
interface RaisedError {
  name: string;
  args: Record<string, unknown>;
}

/** What core/escrow predicts for a task call, and what it says the call does when it goes through. */
interface Prediction {
  check: Check<object>;
  /** Checks the call's decoded events against what the successful check named (round, claim outcome, disputant). */
  outcome?: (events: EscrowLog[]) => void;
}

class Run {
  readonly model: EscrowModel;
  private readonly generations = Array.from({ length: SLOTS }, () => 0);
  private readonly endings = new Map<string, number>();
  private readonly signers = new Map<string, HardhatEthersSigner>();
  private readonly tokens: Record<TokenName, string>;
  private readonly accounts: Record<Account, HardhatEthersSigner>;
  readonly trace: string[] = [];
  /** How often each outcome (success or an error name) occurred: what the run exercised. */
  readonly outcomes = new Map<string, number>();
  /** Every task as core/escrow's decoder and fold project it from the escrow's own logs. */
  private readonly folded = new Map<string, ProjectedTask>();
  /** The escrow-wide state as core/escrow folds it (the fixture set the fee before the run). */
  private escrowState: EscrowState = { pausedAt: null, totalPaused: 0, feeBps: 1000 };

  constructor(
    private readonly ctx: Ctx,
    now: bigint,
  ) {
    const { escrowAddress, admin, verifier, treasury, token, blocklistToken, unlistedToken, poster, poster2 } = ctx;
    this.tokens = { usdc: token, blocklist: blocklistToken, unlisted: unlistedToken };
    this.accounts = {
      poster: ctx.poster,
      poster2: ctx.poster2,
      worker: ctx.worker,
      worker2: ctx.worker2,
      treasury: ctx.treasury,
      stranger: ctx.stranger,
    };
    for (const signer of this.trackedSigners()) this.signers.set(signer.address, signer);
    this.model = new EscrowModel({
      escrow: escrowAddress,
      admin: admin.address,
      verifier: verifier.address,
      treasury: treasury.address,
      feeBps: 1000n,
      blocklistToken,
      allowedTokens: [token, blocklistToken, ctx.feeTokenAddress],
      approved: [poster.address, poster2.address],
    });
    this.model.now = now;
  }

  private trackedSigners(): HardhatEthersSigner[] {
    const c = this.ctx;
    return [c.admin, c.verifier, c.treasury, c.poster, c.worker, c.stranger, c.agentVerifier, c.poster2, c.worker2];
  }

  private get trackedAddresses(): string[] {
    return [...this.trackedSigners().map((s) => s.address), this.ctx.escrowAddress];
  }

  async readBalances() {
    for (const token of [this.tokens.usdc, this.tokens.blocklist]) {
      const contract = token === this.tokens.usdc ? this.ctx.usdc : this.ctx.blocklist;
      for (const address of this.trackedAddresses) {
        this.model.setBalance(token, address, await contract.balanceOf(address));
      }
    }
  }

  private hashFor(s: number): string {
    return ethers.id(`property task ${s}.${this.generations[s]}`);
  }

  /** For funding: a fresh hash once the slot's task ended, unless the command means to reuse the old one. */
  private hashToFund(s: number, reuse: boolean): string {
    const current = this.model.tasks.get(this.hashFor(s));
    if (current && current.ending !== Ending.None && !reuse) this.generations[s]! += 1;
    return this.hashFor(s);
  }

  private targetHash(kind: TaskCommand, target: Target): string {
    const all = [...this.model.tasks.values()];
    const live = all.filter((t) => t.ending === Ending.None);
    const fitting = live.filter((t) => (STATUSES_FOR[CALLS[kind]] as readonly number[]).includes(t.status));
    const pool =
      target.scope === "unknown"
        ? []
        : target.scope === "fitting" && fitting.length > 0
          ? fitting
          : target.scope !== "any" && live.length > 0
            ? live
            : all;
    if (pool.length === 0) return ethers.id(`never funded ${target.pick}`);
    return pool[target.pick % pool.length]!.hash;
  }

  private resolve(role: Role, t: ModelTask | undefined): HardhatEthersSigner {
    const c = this.ctx;
    const signer = (address: string) => this.signers.get(address)!;
    switch (role) {
      case "poster":
        return t ? signer(t.poster) : c.poster;
      case "otherPoster":
        return t?.poster === c.poster2.address ? c.poster : c.poster2;
      case "worker":
        return t && t.worker !== ZERO ? signer(t.worker) : c.worker;
      case "otherWorker":
        return t?.worker === c.worker.address ? c.worker2 : c.worker;
      case "judge":
        return t && t.verifier !== ZERO ? signer(t.verifier) : c.verifier;
      case "marketplace":
        return c.verifier;
      case "agent":
        return c.agentVerifier;
      case "admin":
        return c.admin;
      case "stranger":
        return c.stranger;
    }
  }

  private workerAddress(choice: WorkerChoice, t: ModelTask | undefined): string {
    const c = this.ctx;
    switch (choice) {
      case "worker":
        return c.worker.address;
      case "worker2":
        return c.worker2.address;
      case "stranger":
        return c.stranger.address;
      case "poster":
        return t?.poster ?? c.poster.address;
      case "agent":
        return c.agentVerifier.address;
      case "zero":
        return ZERO;
    }
  }

  private raised(error: unknown): RaisedError {
    const data = (error as { data?: unknown }).data;
    if (typeof data === "string" && data.length >= 10) {
      for (const iface of [this.ctx.escrow.interface, this.ctx.blocklist.interface, this.ctx.usdc.interface]) {
        try {
          const parsed = iface.parseError(data);
          if (parsed) {
            const args = Object.fromEntries(parsed.fragment.inputs.map((input, i) => [input.name, parsed.args[i]]));
            return { name: parsed.name, args };
          }
        } catch {
          // not this contract's error
        }
      }
    }
    return { name: `unknown (${(error as Error).message})`, args: {} };
  }

  /** The escrow's logs of a receipt, decoded by core/escrow, at block time `at`. */
  private decode(receipt: ContractTransactionReceipt, at: bigint): EscrowLog[] {
    return receipt.logs
      .filter((log) => log.address === this.ctx.escrowAddress)
      .map((log) =>
        decodeEscrowLog(
          {
            chain: "hardhat",
            blockNumber: receipt.blockNumber,
            blockHash: receipt.blockHash,
            logIndex: log.index,
            txHash: receipt.hash,
            txIndex: receipt.index,
            blockTime: Number(at),
          },
          log.topics,
          log.data,
        ),
      );
  }

  /** Applies a mined transaction's logs with core/escrow's fold, as the indexer does. */
  private fold(events: EscrowLog[]) {
    for (const event of events) {
      if (event.taskHash !== null) {
        const task = applyTaskEvent(this.folded.get(event.taskHash), event);
        if (task) this.folded.set(event.taskHash, task);
        continue;
      }
      this.escrowState = applyStateEvent(this.escrowState, event) ?? this.escrowState;
      if (event.event === "EscrowUnpaused") {
        for (const [hash, task] of this.folded) this.folded.set(hash, shiftForPause(task, Number(event.args.pausedFor))!);
      }
    }
  }

  /**
   * The task as the escrow's `getTask` reports it before a call (the model's view, which every step checks against
   * `getTask`): what core/escrow's preconditions read. A live task reads the same from core/escrow's fold of the logs
   * (while not paused: a pause moves its times in the view first). An ended task's times differ: the fold keeps
   * those it ended with, as the indexer does, while the view keeps projecting them.
   */
  private snapshotBefore(hash: string): TaskSnapshot | undefined {
    const modelView = this.model.view(hash);
    const view = modelView && snapshotFromView(hash, modelView);
    const task = this.folded.get(hash);
    if (!view || !task) {
      expect(task, `core/escrow's fold knows task ${hash} exactly when the escrow does`).to.equal(view);
    } else if (task.ending === Ending.None && !this.model.paused) {
      expectSame(snapshotOf(task), view, `core/escrow's fold of ${hash}`);
    }
    return view;
  }

  /** What a task call names about itself, from the escrow's view: who calls, whether paused, when. */
  private callOf(hash: string, sender: HardhatEthersSigner, at: bigint) {
    return { taskHash: hash, caller: sender.address, paused: this.escrowState.pausedAt !== null, now: Number(at) };
  }

  /** Success exactly when core/escrow predicted it; otherwise the custom error it named, with the same arguments. */
  private checkPrediction(prediction: Prediction, raised: RaisedError | undefined, events: EscrowLog[]) {
    const { check } = prediction;
    if (check.ok) {
      expect(raised?.name ?? "success", "core/escrow predicted success").to.equal("success");
      prediction.outcome?.(events);
      for (const event of events) {
        if (event.event !== "TaskCompleted") continue;
        const task = this.folded.get(event.args.taskHash)!;
        const split = payoutSplit(task.amount, this.escrowState.feeBps);
        expectSame({ fee: BigInt(event.args.fee), payout: BigInt(event.args.payout) }, split, "core/escrow's payout split");
      }
      return;
    }
    expect(raised?.name ?? "success", "core/escrow's predicted refusal").to.equal(check.refusal.error);
    expectSame(normalizeArgs(raised!.args), normalizeArgs(check.refusal.args), `arguments of ${check.refusal.error}`);
  }

  /**
   * Mines `send` at the next second, and checks the outcome and the events against the model's expectation and,
   * for a task call, against core/escrow's prediction; then folds the logs with core/escrow.
   */
  private async transact(
    expected: Outcome,
    at: bigint,
    send: () => Promise<ContractTransactionResponse>,
    prediction?: Prediction,
  ): Promise<ContractTransactionReceipt | undefined> {
    await time.setNextBlockTimestamp(at);
    this.model.now = at;
    let receipt: ContractTransactionReceipt | undefined;
    let raised: RaisedError | undefined;
    try {
      receipt = (await (await send()).wait()) ?? undefined;
    } catch (error) {
      raised = this.raised(error);
    }
    const actual = raised?.name ?? "success";
    const wanted = "error" in expected ? expected.error : "success";
    this.outcomes.set(wanted, (this.outcomes.get(wanted) ?? 0) + 1);
    expect(actual, "the escrow's outcome differs from the model's").to.equal(wanted);
    const events = receipt ? this.decode(receipt, at) : [];
    if (prediction) this.checkPrediction(prediction, raised, events);
    if (receipt && "events" in expected) this.checkEvents(receipt, expected.events);
    this.fold(events);
    return receipt;
  }

  private checkEvents(receipt: ContractTransactionReceipt, expected: ExpectedEvent[]) {
    const escrow = this.ctx.escrow;
    const emitted = receipt.logs
      .filter((log) => log.address === this.ctx.escrowAddress)
      .map((log) => escrow.interface.parseLog(log)!)
      .map((parsed) => ({ name: parsed.name, args: normalize(Array.from(parsed.args)) }));
    expect(emitted, "events").to.deep.equal(expected.map((e) => ({ name: e.name, args: normalize(e.args) })));
    // Independent of the model: a task ends at most once.
    for (const event of emitted) {
      if (!ENDING_EVENTS.has(event.name)) continue;
      const hash = (event.args as unknown[])[0] as string;
      const seen = (this.endings.get(hash) ?? 0) + 1;
      this.endings.set(hash, seen);
      expect(seen, `task ${hash} ended twice`).to.equal(1);
    }
  }

  /** Runs one command; returns the task hashes it touched. */
  async step(cmd: Command): Promise<string[]> {
    const { escrow, admin } = this.ctx;
    const m = this.model;
    const at = m.now + 1n;
    this.trace.push(JSON.stringify(cmd, (_, v) => (typeof v === "bigint" ? `${v}n` : v)));
    switch (cmd.kind) {
      case "create": {
        const hash = this.hashToFund(cmd.slot, cmd.reuse);
        const sender = this.resolve(cmd.actor, undefined);
        const token = this.tokens[cmd.token];
        const verifier = cmd.judge === "agent" ? this.ctx.agentVerifier.address : cmd.judge === "self" ? sender.address : ZERO;
        const entry = { hash, token, amount: cmd.amount, duration: cmd.duration, verifier };
        const expected = m.createTasks(sender.address, at, [entry], false);
        await this.transact(expected, at, () => escrow.connect(sender).createTask(hash, token, cmd.amount, cmd.duration, verifier));
        return [hash];
      }
      case "createBatch": {
        const sender = this.resolve(cmd.actor, undefined);
        const token = this.tokens[cmd.token];
        const other = cmd.token === "usdc" ? this.tokens.blocklist : this.tokens.usdc;
        const entries = cmd.slots.map((s, i) => ({
          hash: this.hashToFund(s, false),
          token: cmd.mismatch && i === cmd.slots.length - 1 && i > 0 ? other : token,
          amount: cmd.amounts[i]!,
          duration: cmd.duration,
          verifier: ZERO,
        }));
        const expected = m.createTasks(sender.address, at, entries, true);
        await this.transact(expected, at, () =>
          escrow.connect(sender).createTasks(
            entries.map((e) => ({
              taskHash: e.hash,
              token: e.token,
              amount: e.amount,
              duration: e.duration,
              verifier: e.verifier,
            })),
          ),
        );
        return entries.map((e) => e.hash);
      }
      case "cancel":
      case "assign":
      case "marketAssign":
      case "submit":
      case "verify":
      case "dispute":
      case "resolve":
      case "claim":
      case "release":
      case "handBack": {
        const hash = this.targetHash(cmd.kind, cmd.task);
        const t = m.tasks.get(hash);
        const sender = this.resolve(cmd.actor, t);
        const as = escrow.connect(sender);
        const task = this.snapshotBefore(hash);
        const call = this.callOf(hash, sender, at);
        const marketplaceVerifier = this.ctx.verifier.address;
        const only = <E extends EscrowLog["event"]>(events: EscrowLog[], name: E) =>
          events.filter((e): e is Extract<EscrowLog, { event: E }> => e.event === name);
        let expected: Outcome;
        let send: () => Promise<ContractTransactionResponse>;
        let prediction: Prediction;
        if (cmd.kind === "cancel") {
          expected = m.cancelTask(sender.address, at, hash);
          send = () => as.cancelTask(hash);
          prediction = { check: canCancel(task, call) };
        } else if (cmd.kind === "assign" || cmd.kind === "marketAssign") {
          const worker = this.workerAddress(cmd.worker, t);
          const byMarketplace = cmd.kind === "marketAssign";
          expected = m.assignWorker(sender.address, at, hash, worker, byMarketplace);
          send = () => (byMarketplace ? as.marketplaceAssign(hash, worker) : as.assignWorker(hash, worker));
          const by = byMarketplace ? "marketplace" : "poster";
          prediction = { check: canAssign(task, { ...call, worker, by, marketplaceVerifier }) };
        } else if (cmd.kind === "submit") {
          const resultHash = cmd.zeroHash ? ethers.ZeroHash : ethers.id(`result ${hash} ${at}`);
          expected = m.submitEvidence(sender.address, at, hash, resultHash);
          send = () => as.submitEvidence(hash, resultHash);
          const check = canDeliver(task, { ...call, resultHash });
          prediction = {
            check,
            outcome: (events) =>
              expectSame(
                only(events, "EvidenceSubmitted").map((e) => Number(e.args.round)),
                check.ok ? [check.round] : [],
                "round",
              ),
          };
        } else if (cmd.kind === "verify") {
          expected = m.completeVerification(sender.address, at, hash, cmd.passed, cmd.score);
          send = () => as.completeVerification(hash, cmd.passed, cmd.score);
          prediction = { check: canVerify(task, { ...call, marketplaceVerifier, score: cmd.score }) };
        } else if (cmd.kind === "dispute") {
          expected = m.raiseDispute(sender.address, at, hash);
          send = () => as.raiseDispute(hash);
          const check = canDispute(task, call);
          prediction = {
            check,
            outcome: (events) =>
              expectSame(
                only(events, "DisputeRaised").map((e) => e.args.raisedBy),
                check.ok ? [check.by === "worker" ? task!.worker : task!.poster] : [],
                "disputant",
              ),
          };
        } else if (cmd.kind === "resolve") {
          expected = m.resolveDispute(sender.address, hash, cmd.workerWins);
          send = () => as.resolveDispute(hash, cmd.workerWins);
          prediction = { check: canResolve(task, { caller: sender.address, admin: this.ctx.admin.address, taskHash: hash }) };
        } else if (cmd.kind === "claim") {
          expected = m.claimTimeout(sender.address, at, hash);
          send = () => as.claimTimeout(hash);
          const check = canClaim(task, call);
          prediction = {
            check,
            outcome: (events) => {
              if (!check.ok) return;
              if (check.outcome === "escalate") {
                expectSame(
                  only(events, "UnjudgedWorkEscalated").map((e) => Number(e.args.releasableAt)),
                  [check.releasableAt],
                  "releasableAt",
                );
              } else {
                expectSame(
                  only(events, "DeadlineExpired").map((e) => Number(e.args.ending)),
                  [check.ending],
                  "refund ending",
                );
              }
            },
          };
        } else if (cmd.kind === "handBack") {
          expected = m.releaseTask(sender.address, hash);
          send = () => as.releaseTask(hash);
          prediction = { check: canRelease(task, call) };
        } else {
          expected = m.releaseUnjudgedWork(sender.address, at, hash);
          send = () => as.releaseUnjudgedWork(hash);
          prediction = { check: canReleaseUnjudged(task, call) };
        }
        await this.transact(expected, at, send, prediction);
        return [hash];
      }
      case "withdraw": {
        const sender = this.accounts[cmd.account];
        const token = this.tokens[cmd.token];
        const expected = m.withdrawCredit(sender.address, token);
        await this.transact(expected, at, () => escrow.connect(sender).withdrawCredit(token));
        return [];
      }
      case "block": {
        const address = this.accounts[cmd.account].address;
        await this.transact({ events: [] }, at, () => this.ctx.blocklist.setBlocked(address, cmd.blocked));
        if (cmd.blocked) m.blocked.add(address);
        else m.blocked.delete(address);
        return [];
      }
      case "wait": {
        await time.increaseTo(m.now + cmd.seconds);
        m.now += cmd.seconds;
        return [];
      }
      case "pause":
      case "unpause": {
        const sender = this.resolve(cmd.actor, undefined);
        const expected = cmd.kind === "pause" ? m.pause(sender.address, at) : m.unpause(sender.address, at);
        await this.transact(expected, at, () => (cmd.kind === "pause" ? escrow.connect(sender).pause() : escrow.connect(sender).unpause()));
        return [];
      }
      case "setFee": {
        const sender = this.resolve(cmd.actor, undefined);
        await this.transact(m.setFeeBps(sender.address, cmd.fee), at, () => escrow.connect(sender).setFeeBps(cmd.fee));
        return [];
      }
      case "allowToken": {
        const sender = this.resolve(cmd.actor, undefined);
        const token = this.tokens[cmd.token];
        await this.transact(m.setAllowedToken(sender.address, token, cmd.allowed), at, () =>
          escrow.connect(sender).setAllowedToken(token, cmd.allowed),
        );
        return [];
      }
      case "sweep": {
        const sender = cmd.actor === "treasury" ? this.ctx.treasury : this.resolve(cmd.actor, undefined);
        const token = this.tokens[cmd.token];
        await this.transact(m.sweepFees(sender.address, token), at, () => escrow.connect(sender).sweepFees(token));
        return [];
      }
      case "stray": {
        const contract = cmd.token === "usdc" ? this.ctx.usdc : this.ctx.blocklist;
        await this.transact({ events: [] }, at, () => contract.connect(admin).mint(this.ctx.escrowAddress, cmd.amount));
        m.receiveStray(this.tokens[cmd.token], cmd.amount);
        return [];
      }
      case "rescue": {
        const sender = this.resolve(cmd.actor, undefined);
        const token = this.tokens[cmd.token];
        const surplus = m.get(m.surplus, token);
        const value = cmd.amount === "surplus" ? surplus : cmd.amount === "more" ? surplus + 1n : 1n;
        const to = cmd.to === "admin" ? admin.address : this.ctx.stranger.address;
        await this.transact(m.rescueSurplus(sender.address, token, to, value), at, () => escrow.connect(sender).rescueSurplus(token, to, value));
        return [];
      }
    }
  }

  /** What must hold after every step. */
  async checkBooks() {
    const { escrow, escrowAddress } = this.ctx;
    for (const [token, contract] of [
      [this.tokens.usdc, this.ctx.usdc],
      [this.tokens.blocklist, this.ctx.blocklist],
    ] as const) {
      const [balance, escrowed, credited, fees] = await Promise.all([
        contract.balanceOf(escrowAddress),
        escrow.escrowed(token),
        escrow.totalCredited(token),
        escrow.accruedFees(token),
      ]);
      let live = 0n;
      for (const t of this.model.tasks.values()) if (t.token === token && t.ending === Ending.None) live += t.amount;
      expect(escrowed, "escrowed == sum of live task amounts").to.equal(live);
      expect(credited, "totalCredited == sum of credits").to.equal(this.model.totalCredited(token));
      expect(fees, "accruedFees == fees kept since the last sweep").to.equal(this.model.get(this.model.fees, token));
      expect(balance, "balance == escrowed + credited + accrued fees (+ stray surplus)").to.equal(
        escrowed + credited + fees + this.model.get(this.model.surplus, token),
      );
    }
  }

  async checkTask(hash: string) {
    const actual = await this.ctx.escrow.getTask(hash);
    const wanted = this.model.view(hash);
    if (!wanted) {
      expect(actual.poster, `task ${hash} must not exist`).to.equal(ZERO);
      expect(this.folded.has(hash), `core/escrow's fold has no task ${hash}`).to.equal(false);
      return;
    }
    const { poster, worker, verifier, token, amount, deadline, windowEndsAt, status, rounds, ending } = actual;
    const view = { poster, worker, verifier, token, amount, deadline, windowEndsAt, status, rounds, ending };
    expectSame(view, wanted, `getTask(${hash})`);
    this.checkFolded(hash, view);
  }

  /**
   * core/escrow's fold reads as the escrow's view. A live task's times move with the current pause only in the view
   * (the fold moves them once the pause ends, as the indexer does); an ended task keeps the times it ended with.
   */
  private checkFolded(hash: string, view: Parameters<typeof snapshotFromView>[1] & { token: string; amount: bigint; ending: bigint }) {
    const task = this.folded.get(hash);
    expect(task, `core/escrow's fold has task ${hash}`).to.not.equal(undefined);
    const { token, amount, ending } = task!;
    expectSame({ token, amount, ending: BigInt(ending) }, { token: view.token, amount: view.amount, ending: view.ending }, `fold of ${hash}`);
    const folded = snapshotOf(task!);
    const fromView = snapshotFromView(hash, view)!;
    if (ending !== Ending.None) {
      expectSame({ ...folded, deadline: 0, windowEndsAt: 0 }, { ...fromView, deadline: 0, windowEndsAt: 0 }, `fold of ${hash}`);
      return;
    }
    const m = this.model;
    const pausing = Number(m.paused ? m.now - m.pausedAt : 0n);
    const moved = { ...folded, deadline: folded.deadline + pausing, windowEndsAt: folded.windowEndsAt && folded.windowEndsAt + pausing };
    expectSame(moved, fromView, `fold of ${hash}`);
  }

  /** Every task, credit, balance and setting. */
  async checkEverything() {
    const { escrow } = this.ctx;
    for (const hash of this.model.tasks.keys()) await this.checkTask(hash);
    for (const token of [this.tokens.usdc, this.tokens.blocklist]) {
      const contract = token === this.tokens.usdc ? this.ctx.usdc : this.ctx.blocklist;
      for (const address of this.trackedAddresses) {
        expect(await contract.balanceOf(address), `balance of ${address}`).to.equal(this.model.balance(token, address));
        expect(await escrow.creditOf(token, address), `credit of ${address}`).to.equal(this.model.credit(token, address));
      }
    }
    expect(await escrow.feeBps()).to.equal(this.model.feeBps);
    expect(await escrow.paused()).to.equal(this.model.paused);
    expect(await escrow.totalPaused()).to.equal(this.model.totalPaused);
    const { pausedAt, totalPaused, feeBps } = this.escrowState;
    expect({ pausedAt, totalPaused: BigInt(totalPaused), feeBps: BigInt(feeBps) }, "core/escrow's fold of the escrow state").to.deep.equal({
      pausedAt: this.model.paused ? Number(this.model.pausedAt) : null,
      totalPaused: this.model.totalPaused,
      feeBps: this.model.feeBps,
    });
    expect(BigInt(await time.latest())).to.equal(this.model.now);
  }
}

describe("TaskEscrow invariants (property test)", function () {
  it(`holds over ${RUNS} random runs of ${STEPS} steps`, async function () {
    // A larger FC_RUNS or FC_STEPS gets proportionally more time than the default size's two minutes.
    this.timeout(Math.max(120_000, RUNS * STEPS * 60));
    const stats = { steps: 0 };
    const endings = new Map<number, number>();
    const outcomes = new Map<string, number>();
    const property = fc.asyncProperty(fc.array(command, { minLength: STEPS, maxLength: STEPS }), async (commands) => {
      const ctx = await loadFixture(propertyFixture);
      const run = new Run(ctx, BigInt(await time.latest()));
      await run.readBalances();
      for (const [index, cmd] of commands.entries()) {
        try {
          const touched = await run.step(cmd);
          await run.checkBooks();
          for (const hash of touched) await run.checkTask(hash);
          if ((index + 1) % FULL_CHECK_EVERY === 0) await run.checkEverything();
        } catch (error) {
          const first = Math.max(0, run.trace.length - 12);
          const recent = run.trace.slice(first).map((line, i) => `  ${first + i}: ${line}`);
          throw new Error(`step ${index} failed: ${(error as Error).message}\nlast commands:\n${recent.join("\n")}`, { cause: error });
        }
        stats.steps += 1;
      }
      await run.checkEverything();
      for (const t of run.model.tasks.values()) endings.set(t.ending, (endings.get(t.ending) ?? 0) + 1);
      for (const [outcome, count] of run.outcomes) outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + count);
    });
    const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() % 2 ** 31;
    const details = await fc.check(property, {
      numRuns: RUNS,
      seed,
      path: process.env.FC_PATH,
      endOnFailure: true,
    });
    if (details.failed) {
      throw new Error(
        `property failed (seed ${details.seed}, path ${details.counterexamplePath}); reproduce with ` +
          `FC_SEED=${details.seed} FC_PATH=${details.counterexamplePath}\n${(details.errorInstance as Error | null)?.message}`,
      );
    }
    expect(stats.steps).to.equal(RUNS * STEPS);
    if (process.env.FC_VERBOSE) {
      console.log("endings:", Object.fromEntries([...endings].map(([e, n]) => [endingName(e), n])));
      console.log("outcomes:", Object.fromEntries([...outcomes].sort((a, b) => b[1] - a[1])));
    }
    // The runs must have exercised the escrow, not only its refusals.
    const ended = [...endings].reduce((sum, [e, n]) => sum + (e === Ending.None ? 0 : n), 0);
    expect(ended, "tasks ended across the runs").to.be.at.least((RUNS * STEPS) / 100);
  });
});

/**
 * A reference model of the escrow's rules, in plain TypeScript, for the property test (invariants.test.ts).
 * Every call returns what the escrow must do: revert with a named error, or succeed with exact events, in which case
 * the model has applied the effects (tasks, books, credits and every tracked balance).
 * Errors are checked in the escrow's order, so the model also predicts which refusal a call meets first.
 */
import { Ending, Status } from "../fixtures/escrow";
import * as limits from "@market/core/limits";

const ZERO = "0x0000000000000000000000000000000000000000";
// The escrow's numbers, from core/limits (test/core/limits.test.ts checks them against the contract's constants).
export const APPEAL_WINDOW = BigInt(limits.APPEAL_WINDOW_SECONDS);
export const RULING_WINDOW = BigInt(limits.RULING_WINDOW_SECONDS);
const MIN_DURATION = BigInt(limits.MIN_TASK_DURATION_SECONDS);
const MAX_DURATION = BigInt(limits.MAX_TASK_DURATION_SECONDS);
const MAX_ROUNDS = BigInt(limits.MAX_SUBMISSIONS);
const MAX_FEE_BPS = BigInt(limits.MAX_FEE_BPS);
const BPS = BigInt(limits.BPS_DENOMINATOR);
const MAX_BATCH = limits.BATCH_CHUNK_SIZE;
const MAX_UINT96 = 2n ** 96n - 1n;

type StatusValue = (typeof Status)[keyof typeof Status];
type EndingValue = (typeof Ending)[keyof typeof Ending];

export interface ModelTask {
  hash: string;
  poster: string;
  worker: string;
  verifier: string;
  token: string;
  amount: bigint;
  /** Escrow-clock readings, as the contract stores them. */
  deadline: bigint;
  phaseAt: bigint;
  status: StatusValue;
  rounds: bigint;
  ending: EndingValue;
}

export interface ExpectedEvent {
  name: string;
  args: unknown[];
}

export type Outcome = { error: string } | { events: ExpectedEvent[] };

const fail = (error: string): Outcome => ({ error });

export interface ModelRoles {
  escrow: string;
  admin: string;
  verifier: string;
  treasury: string;
  feeBps: bigint;
  /** The token that refuses transfers to blocked accounts; every other token always delivers. */
  blocklistToken: string;
  allowedTokens: string[];
  /** Accounts that approved the escrow for every token. */
  approved: string[];
}

export class EscrowModel {
  readonly escrow: string;
  readonly admin: string;
  readonly verifier: string;
  treasury: string;
  feeBps: bigint;
  readonly blocklistToken: string;
  readonly allowed = new Set<string>();
  readonly approved: Set<string>;
  /** Block time of the latest block. */
  now = 0n;
  pausedAt = 0n;
  totalPaused = 0n;
  readonly tasks = new Map<string, ModelTask>();
  readonly blocked = new Set<string>();
  readonly escrowed = new Map<string, bigint>();
  readonly surplus = new Map<string, bigint>();
  /** Fees kept from payouts since the last sweep (4.0.0), per token. */
  readonly fees = new Map<string, bigint>();
  /** `${token}|${account}` -> amount. */
  readonly credits = new Map<string, bigint>();
  readonly balances = new Map<string, bigint>();

  constructor(roles: ModelRoles) {
    this.escrow = roles.escrow;
    this.admin = roles.admin;
    this.verifier = roles.verifier;
    this.treasury = roles.treasury;
    this.feeBps = roles.feeBps;
    this.blocklistToken = roles.blocklistToken;
    for (const token of roles.allowedTokens) this.allowed.add(token);
    this.approved = new Set(roles.approved);
  }

  // ------------------------------------------------------------------ books

  get(map: Map<string, bigint>, key: string): bigint {
    return map.get(key) ?? 0n;
  }

  private add(map: Map<string, bigint>, key: string, amount: bigint) {
    map.set(key, this.get(map, key) + amount);
  }

  balance(token: string, account: string): bigint {
    return this.get(this.balances, `${token}|${account}`);
  }

  setBalance(token: string, account: string, amount: bigint) {
    this.balances.set(`${token}|${account}`, amount);
  }

  credit(token: string, account: string): bigint {
    return this.get(this.credits, `${token}|${account}`);
  }

  totalCredited(token: string): bigint {
    let total = 0n;
    for (const [key, amount] of this.credits) if (key.startsWith(`${token}|`)) total += amount;
    return total;
  }

  private move(token: string, from: string, to: string, amount: bigint) {
    this.add(this.balances, `${token}|${from}`, -amount);
    this.add(this.balances, `${token}|${to}`, amount);
  }

  private refusesTransferTo(token: string, to: string): boolean {
    return token === this.blocklistToken && this.blocked.has(to);
  }

  /** The escrow's `_send`: a refused transfer becomes a credit. */
  private send(token: string, to: string, amount: bigint, events: ExpectedEvent[]) {
    if (amount === 0n) return;
    if (this.refusesTransferTo(token, to)) {
      this.add(this.credits, `${token}|${to}`, amount);
      events.push({ name: "Credited", args: [token, to, amount] });
    } else {
      this.move(token, this.escrow, to, amount);
    }
  }

  // ------------------------------------------------------------------ time

  get paused(): boolean {
    return this.pausedAt !== 0n;
  }

  /** The escrow clock for a transaction mined at `at` (only read while live). */
  private clock(at: bigint): bigint {
    return at - this.totalPaused;
  }

  /** A clock reading projected onto the block time of the latest block, as getTask reports it. */
  project(clockTime: bigint): bigint {
    return clockTime + this.totalPaused + (this.paused ? this.now - this.pausedAt : 0n);
  }

  /** What getTask must return for `hash`. */
  view(hash: string) {
    const t = this.tasks.get(hash);
    if (!t) return undefined;
    let windowEndsAt = 0n;
    if (t.status === Status.Failed) {
      const appealEnd = t.phaseAt + APPEAL_WINDOW;
      windowEndsAt = this.project(appealEnd > t.deadline ? appealEnd : t.deadline);
    } else if (t.status === Status.Disputed) {
      const opens = t.phaseAt + RULING_WINDOW;
      windowEndsAt = this.project(opens > t.deadline ? opens : t.deadline);
    } else if (t.status === Status.Escalated) windowEndsAt = this.project(t.phaseAt + RULING_WINDOW);
    return {
      poster: t.poster,
      worker: t.worker,
      verifier: t.verifier,
      token: t.token,
      amount: t.amount,
      deadline: this.project(t.deadline),
      windowEndsAt,
      status: BigInt(t.status),
      rounds: t.rounds,
      ending: BigInt(t.ending),
    };
  }

  // ------------------------------------------------------------------ funding

  createTasks(
    sender: string,
    at: bigint,
    entries: { hash: string; token: string; amount: bigint; duration: bigint; verifier: string }[],
    batch: boolean,
  ): Outcome {
    if (batch && (entries.length === 0 || entries.length > MAX_BATCH)) return fail("InvalidBatchSize");
    if (this.paused) return fail("EscrowPaused");
    const token = entries[0]!.token;
    if (!this.allowed.has(token)) return fail("TokenNotAllowed");
    const seen = new Set<string>();
    let total = 0n;
    for (const entry of entries) {
      if (entry.token !== token) return fail("BatchTokenMismatch");
      if (entry.amount === 0n) return fail("ZeroAmount");
      if (entry.duration < MIN_DURATION || entry.duration > MAX_DURATION) return fail("InvalidDuration");
      if (entry.verifier === sender) return fail("VerifierIsPoster");
      if (this.tasks.has(entry.hash) || seen.has(entry.hash)) return fail("TaskHashUsed");
      if (entry.amount > MAX_UINT96) return fail("AmountTooLarge");
      seen.add(entry.hash);
      total += entry.amount;
    }
    if (!this.approved.has(sender)) return fail("ERC20InsufficientAllowance");
    if (this.balance(token, sender) < total) return fail("ERC20InsufficientBalance");

    const events: ExpectedEvent[] = [];
    const clock = this.clock(at);
    for (const entry of entries) {
      this.tasks.set(entry.hash, {
        hash: entry.hash,
        poster: sender,
        worker: ZERO,
        verifier: entry.verifier,
        token,
        amount: entry.amount,
        deadline: clock + entry.duration,
        phaseAt: 0n,
        status: Status.Funded,
        rounds: 0n,
        ending: Ending.None,
      });
      events.push({
        name: "TaskCreated",
        args: [entry.hash, sender, token, entry.amount, at + entry.duration, entry.verifier],
      });
    }
    this.move(token, sender, this.escrow, total);
    this.add(this.escrowed, token, total);
    return { events };
  }

  // ------------------------------------------------------------------ life cycle

  cancelTask(sender: string, at: bigint, hash: string): Outcome {
    if (this.paused) return fail("EscrowPaused");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (sender !== t.poster) return fail("NotPoster");
    if (t.status !== Status.Funded) return fail("InvalidStatus");
    void at;
    return { events: this.refund(t, Status.Cancelled, Ending.CancelledWhileOpen, "TaskCancelled") };
  }

  assignWorker(sender: string, at: bigint, hash: string, worker: string, byMarketplace: boolean): Outcome {
    if (byMarketplace && sender !== this.verifier) return fail("NotMarketplaceVerifier");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (!byMarketplace && sender !== t.poster) return fail("NotPoster");
    if (this.paused) return fail("EscrowPaused");
    if (t.status !== Status.Funded) return fail("InvalidStatus");
    if (this.clock(at) >= t.deadline) return fail("DeadlinePassed");
    if (worker === ZERO || worker === t.poster || worker === t.verifier || worker === this.verifier) return fail("InvalidWorker");
    t.worker = worker;
    t.status = Status.Assigned;
    return { events: [{ name: "WorkerAssigned", args: [hash, worker, sender] }] };
  }

  releaseTask(sender: string, hash: string): Outcome {
    if (this.paused) return fail("EscrowPaused");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (sender !== t.worker) return fail("NotWorker");
    if (t.status !== Status.Assigned) return fail("InvalidStatus");
    t.status = Status.Funded;
    t.worker = ZERO;
    return { events: [{ name: "WorkerReleased", args: [hash, sender] }] };
  }

  submitEvidence(sender: string, at: bigint, hash: string, resultHash: string): Outcome {
    if (this.paused) return fail("EscrowPaused");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (sender !== t.worker) return fail("NotWorker");
    if (t.status !== Status.Assigned && t.status !== Status.Failed) return fail("InvalidStatus");
    if (this.clock(at) >= t.deadline) return fail("DeadlinePassed");
    if (t.rounds >= MAX_ROUNDS) return fail("NoRoundsLeft");
    if (/^0x0*$/.test(resultHash)) return fail("ZeroResultHash");
    t.rounds += 1n;
    t.status = Status.Submitted;
    return { events: [{ name: "EvidenceSubmitted", args: [hash, sender, resultHash, t.rounds] }] };
  }

  completeVerification(sender: string, at: bigint, hash: string, passed: boolean, score: number): Outcome {
    if (this.paused) return fail("EscrowPaused");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    const judge = t.verifier !== ZERO ? t.verifier : this.verifier;
    if (sender !== judge) return fail("NotTaskVerifier");
    if (t.status !== Status.Submitted) return fail("InvalidStatus");
    if (score > 100) return fail("InvalidScore");
    const verdict = { name: "VerificationCompleted", args: [hash, sender, passed, score, t.rounds] };
    if (passed) return { events: [verdict, ...this.pay(t, Status.Verified, Ending.VerificationPassed)] };
    t.status = Status.Failed;
    t.phaseAt = this.clock(at);
    return { events: [verdict] };
  }

  raiseDispute(sender: string, at: bigint, hash: string): Outcome {
    if (this.paused) return fail("EscrowPaused");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (t.status !== Status.Assigned && t.status !== Status.Submitted && t.status !== Status.Failed) {
      return fail("InvalidStatus");
    }
    const clock = this.clock(at);
    const beforeDeadline = clock < t.deadline;
    if (sender === t.worker) {
      if (t.status === Status.Failed) {
        if (!beforeDeadline && clock >= t.phaseAt + APPEAL_WINDOW) return fail("AppealWindowClosed");
      } else if (!beforeDeadline) return fail("DeadlinePassed");
    } else if (sender === t.poster) {
      if (!beforeDeadline) return fail("DeadlinePassed");
    } else return fail("NotTaskParty");
    t.status = Status.Disputed;
    t.phaseAt = clock;
    return { events: [{ name: "DisputeRaised", args: [hash, sender] }] };
  }

  resolveDispute(sender: string, hash: string, workerWins: boolean): Outcome {
    if (sender !== this.admin) return fail("NotAdmin");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (t.status !== Status.Disputed && t.status !== Status.Escalated) return fail("InvalidStatus");
    const ruling = { name: "DisputeResolved", args: [hash, workerWins] };
    if (workerWins) return { events: [ruling, ...this.pay(t, Status.Paid, Ending.DisputeWonByWorker)] };
    return { events: [ruling, ...this.refund(t, Status.Refunded, Ending.DisputeWonByPoster, "TaskRefunded")] };
  }

  claimTimeout(sender: string, at: bigint, hash: string): Outcome {
    if (this.paused) return fail("EscrowPaused");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (sender !== t.poster) return fail("NotPoster");
    const clock = this.clock(at);
    if (clock < t.deadline) return fail("DeadlineNotReached");
    let ending: EndingValue;
    if (t.status === Status.Funded || t.status === Status.Assigned) ending = Ending.NeverDelivered;
    else if (t.status === Status.Failed) {
      if (clock < t.phaseAt + APPEAL_WINDOW) return fail("WindowStillOpen");
      ending = Ending.FailedUnfixed;
    } else if (t.status === Status.Disputed) {
      if (clock < t.phaseAt + RULING_WINDOW) return fail("WindowStillOpen");
      ending = Ending.DisputeUnruled;
    } else if (t.status === Status.Submitted) {
      t.status = Status.Escalated;
      t.phaseAt = clock;
      return { events: [{ name: "UnjudgedWorkEscalated", args: [hash, at + RULING_WINDOW] }] };
    } else return fail("InvalidStatus");
    return { events: this.refund(t, Status.Refunded, ending, "DeadlineExpired") };
  }

  releaseUnjudgedWork(sender: string, at: bigint, hash: string): Outcome {
    if (this.paused) return fail("EscrowPaused");
    const t = this.tasks.get(hash);
    if (!t) return fail("TaskNotFound");
    if (sender !== t.worker) return fail("NotWorker");
    if (t.status !== Status.Escalated) return fail("InvalidStatus");
    if (this.clock(at) < t.phaseAt + RULING_WINDOW) return fail("WindowStillOpen");
    return { events: this.pay(t, Status.Paid, Ending.UnjudgedWorkReleased) };
  }

  withdrawCredit(sender: string, token: string): Outcome {
    const to = sender;
    if (this.paused) return fail("EscrowPaused");
    const amount = this.credit(token, sender);
    if (amount === 0n) return fail("NothingToWithdraw");
    if (this.refusesTransferTo(token, to)) return fail("AccountBlocked");
    this.credits.delete(`${token}|${sender}`);
    this.move(token, this.escrow, to, amount);
    return { events: [{ name: "CreditWithdrawn", args: [token, sender, to, amount] }] };
  }

  /** 4.0.0: every accrued fee of `token` to the treasury, by the treasury or the admin. */
  sweepFees(sender: string, token: string): Outcome {
    if (this.paused) return fail("EscrowPaused");
    if (sender !== this.treasury && sender !== this.admin) return fail("NotFeeSweeper");
    const amount = this.get(this.fees, token);
    if (amount === 0n) return fail("NoFeesAccrued");
    if (this.refusesTransferTo(token, this.treasury)) return fail("AccountBlocked");
    this.fees.delete(token);
    this.move(token, this.escrow, this.treasury, amount);
    return { events: [{ name: "FeesSwept", args: [token, this.treasury, amount] }] };
  }

  // ------------------------------------------------------------------ settlement

  private close(t: ModelTask, status: StatusValue, ending: EndingValue) {
    t.status = status;
    t.ending = ending;
    this.add(this.escrowed, t.token, -t.amount);
  }

  private pay(t: ModelTask, status: StatusValue, ending: EndingValue): ExpectedEvent[] {
    this.close(t, status, ending);
    const fee = (t.amount * this.feeBps) / BPS;
    const payout = t.amount - fee;
    const events: ExpectedEvent[] = [];
    this.add(this.fees, t.token, fee);
    this.send(t.token, t.worker, payout, events);
    events.push({ name: "TaskCompleted", args: [t.hash, t.worker, payout, fee, ending] });
    return events;
  }

  private refund(t: ModelTask, status: StatusValue, ending: EndingValue, event: string): ExpectedEvent[] {
    this.close(t, status, ending);
    const events: ExpectedEvent[] = [];
    this.send(t.token, t.poster, t.amount, events);
    events.push({ name: event, args: [t.hash, t.poster, t.amount, ending] });
    return events;
  }

  // ------------------------------------------------------------------ admin

  setFeeBps(sender: string, feeBps: bigint): Outcome {
    if (sender !== this.admin) return fail("NotAdmin");
    if (feeBps > MAX_FEE_BPS) return fail("FeeExceedsMax");
    const previous = this.feeBps;
    this.feeBps = feeBps;
    return { events: [{ name: "FeeUpdated", args: [previous, feeBps] }] };
  }

  setAllowedToken(sender: string, token: string, allowed: boolean): Outcome {
    if (sender !== this.admin) return fail("NotAdmin");
    if (allowed) this.allowed.add(token);
    else this.allowed.delete(token);
    return { events: [{ name: "TokenAllowed", args: [token, allowed] }] };
  }

  pause(sender: string, at: bigint): Outcome {
    if (sender !== this.admin) return fail("NotAdmin");
    if (this.paused) return fail("EscrowPaused");
    this.pausedAt = at;
    return { events: [{ name: "EscrowPausedAt", args: [at] }] };
  }

  unpause(sender: string, at: bigint): Outcome {
    if (sender !== this.admin) return fail("NotAdmin");
    if (!this.paused) return fail("EscrowNotPaused");
    const pausedFor = at - this.pausedAt;
    this.totalPaused += pausedFor;
    this.pausedAt = 0n;
    return { events: [{ name: "EscrowUnpaused", args: [pausedFor, this.totalPaused] }] };
  }

  rescueSurplus(sender: string, token: string, to: string, amount: bigint): Outcome {
    if (sender !== this.admin) return fail("NotAdmin");
    if (to === ZERO) return fail("ZeroAddress");
    const surplus = this.get(this.surplus, token);
    if (amount > surplus) return fail("RescueExceedsSurplus");
    if (this.refusesTransferTo(token, to)) return fail("AccountBlocked");
    this.add(this.surplus, token, -amount);
    this.move(token, this.escrow, to, amount);
    return { events: [{ name: "SurplusRescued", args: [token, to, amount] }] };
  }

  /** Tokens sent to the escrow outside any task (they are surplus). */
  receiveStray(token: string, amount: bigint) {
    this.add(this.surplus, token, amount);
    this.add(this.balances, `${token}|${this.escrow}`, amount);
  }
}

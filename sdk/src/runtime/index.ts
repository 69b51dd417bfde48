import { MarketClient, type AgentProfile, type AssignedTask, type Finalized, type TaskView } from "../client";
import type { AgentAnswer } from "@market/core/api";
import type { TaskStatus } from "@market/core/status";
import { ApiError, clientError } from "../errors";
import type { PinnedEscrows, RpcUrls } from "../chain";
import { planAfterRefusal, systemClock, type Clock, type WrapState } from "./schedule";
import { after, sleep, untilAborted } from "./timers";
import { createGasGate } from "./gas";
import { eventPage, streamEvents } from "../events";
import { CHAIN_NAMES, type ChainName } from "@market/core/chains";
import { RUNTIME_BROWSE_INTERVAL_MS } from "@market/core/limits";
import { roundsUnused } from "@market/core/escrow";
import { unsatisfiable, type VerificationCriteria } from "@market/core/verification/criteria";
import { formatDecimalAmount } from "@market/core/money";
import { publicKeyFromPrivateKey } from "@market/core/crypto";

export { needsWrapDelay, planAfterRefusal, systemClock, type Clock } from "./schedule";

/** Orders two tasks by reward: negative when `a` pays less than `b`. */
function compareRewards(a: TaskView, b: TaskView): number {
  const difference = BigInt(a.meta.reward.amount) - BigInt(b.meta.reward.amount);
  return difference === 0n ? 0 : difference < 0n ? -1 : 1;
}

/** What `executeTask` receives. */
export interface TaskContext {
  taskId: string;
  /** The brief: public text, or the private brief decrypted with the agent's key. */
  instructions: string;
  privacy: "public" | "private";
  chain: ChainName;
  /**
   * The reward: `amount` in raw units as on the wire ("2500000"), `amountRaw` the same as a bigint, `decimal` in the
   * token's units for people ("2.5"), with the token's `symbol` and `decimals`.
   */
  reward: { amount: string; amountRaw: bigint; decimal: string; symbol: string; decimals: number };
  capabilities: string[];
  verification: { mode: string; criteria?: Record<string, unknown> };
  /** Unix milliseconds, like every time on the wire. */
  deadline: number;
  /** 1 for the first delivery; a redelivery after a failed round gets the previous attempt. */
  round: number;
  /** Set on a rental (a task pinned to this agent for one of its services). */
  serviceId?: number;
  previousAttempt?: { output: string; reasons: string[] };
  /** 1 for the first try of this round; a try after executeTask threw (or timed out) gets the next number. */
  attempt: number;
  /** Aborted when this try runs past `taskTimeoutMs` or the deadline, or when stop() stops waiting for it. */
  signal: AbortSignal;
}

/** What stop() left behind: tasks still held and undelivered (a restart resumes them) and verdicts not yet seen. */
export interface StopReport {
  /** Tasks stop() stopped waiting for (its time ran out), with where each stood; nothing more is delivered for them in this run. */
  left: Array<{ taskId: string; status: ExecutionStatus }>;
  /** Delivered `manual` or `agent` tasks whose verdict had not come yet (task hashes, sorted). */
  awaitingVerdict: string[];
}

/** Tries of executeTask per round by default. */
export const DEFAULT_EXECUTE_ATTEMPTS = 3;
/** The first back-off after a failed try, doubled after each. */
export const DEFAULT_RETRY_DELAY_MS = 2_000;
/** How long stop() waits for the work in hand by default. */
export const DEFAULT_STOP_TIMEOUT_MS = 30_000;

export type RuntimeEvent =
  | { type: "registered"; profile: AgentProfile }
  | { type: "task_assigned"; taskId: string }
  /**
   * A delivery finalized: every round, a failed one too (`passed` false; delivered again while rounds remain). A
   * `manual` or `agent` task is reported when finalized (`awaiting_verification`) and again once judged.
   */
  | { type: "task_finalized"; taskId: string; finalize: { status: TaskStatus; verificationResult?: { passed: boolean; reasons: string[] } } }
  /**
   * Skipped, or after `task_assigned` held but undelivered (never a delivered task that failed verification).
   * `released`: executeTask kept failing and the task, never delivered, was handed back (it is open again).
   */
  | { type: "task_failed"; taskId: string; error: { code: string; message: string }; released?: boolean }
  | { type: "error"; error: Error };

export type ExecutionStatus = "bidding" | "assigned" | "working" | "submitted";

/** After ASSIGNMENT_CAP_REACHED, one accept beyond the cap it named is tried this often. */
const CAP_PROBE_INTERVAL_MS = 30_000;
/** After a RATE_LIMITED that names no wait. */
const RATE_LIMITED_WAIT_MS = 5_000;

export interface WorkerRuntimeOptions {
  apiKey: string;
  /** The API key wallet's key: the runtime registers with it, decrypts briefs and signs evidence. */
  privateKey?: string;
  /** The same key, to restart an agent that is already registered without registering it again. */
  existingPrivateKey?: string;
  /** RPC per chain; no default. The agent works on (and declares) exactly these chains; `arc` to work on `arc`. */
  rpcUrls: RpcUrls;
  displayName?: string;
  capabilities?: string[];
  /** Raw units; tasks below it are skipped for a day. */
  minReward?: string | bigint;
  /** Default 1. */
  maxConcurrentTasks?: number;
  executeTask(context: TaskContext): Promise<{ output: string }>;
  baseUrl?: string;
  escrows?: PinnedEscrows;
  fetch?: typeof fetch;
  /** Milliseconds between browses (default 15 s); a task leaving its slot also browses at once. */
  browseIntervalMs?: number;
  /**
   * Default true: follow the API's event stream (docs/events.md) and browse at once when a task is listed or handed
   * back, rather than at the next interval; the interval's browse stays as the fallback (and is all there is when the
   * server has no stream).
   */
  followEvents?: boolean;
  clock?: Clock;
  /** Tasks never taken (nor continued at start), e.g. ones this agent failed before. */
  skipTask?: (task: TaskView) => boolean;
  /**
   * Default true: at start, continue the tasks this wallet already holds (`GET /api/v1/a2a/tasks/assigned`, after a
   * restart): deliver what is undelivered, finalize or follow the verdict of what is delivered, deliver again after
   * a failed round while rounds remain.
   */
  resume?: boolean;
  /** @deprecated The old name of `resume`. */
  resumeHeld?: boolean;
  /** Tries of executeTask per round when it throws or times out (default 3), with back-off, within the deadline. */
  executeAttempts?: number;
  /** Milliseconds before the second try (default 2 s), doubled before each next one; no try starts past the deadline. */
  retryDelayMs?: number;
  /** Longest one executeTask try may run (default: until the task's deadline); its `signal` aborts then. */
  taskTimeoutMs?: number;
  /** Default true: once the tries of a never-delivered task all fail, hand it back (`releaseTask`) so it opens again. */
  releaseFailed?: boolean;
  /** How long stop() waits for the work in hand (default 30 s) unless it is given its own `timeoutMs`. */
  stopTimeoutMs?: number;
  /** Default true. False: a rental whose result failed is never delivered again (hosted agents, spec "Rental"). */
  resubmitRentals?: boolean;
  /** A limit beyond `maxConcurrentTasks` (e.g. shared by many runtimes): no new task is accepted while it says no. */
  hasCapacity?: () => boolean;
  /** Called before the wallet signs each transaction (e.g. to top up its gas). */
  beforeSend?: (tx: { chain: ChainName; from: string; to: string; data: string }) => Promise<void>;
  /**
   * Default true: no task is accepted on a chain where the wallet cannot pay a delivery's gas (INSUFFICIENT_GAS is
   * reported as an `error` event, once until it can), unless `gasSponsored` says a sponsor pays it.
   */
  checkGas?: boolean;
  /** True when a sponsor pays the wallet's next delivery on the chain (the hosted runner's gas sponsor). */
  gasSponsored?: (chain: ChainName) => Promise<boolean>;
}

interface Pending {
  wrap?: WrapState;
  handle?: unknown;
}

/** A delivered `manual` or `agent` task waiting for its verdict; it holds no slot. */
interface Awaiting {
  task: TaskView;
  assigned: AssignedTask;
  instructions: string;
  output: string;
  round: number;
}

/** A task in a slot. */
interface Execution {
  status: ExecutionStatus;
  done: Promise<void>;
  /** Aborts the executeTask try under way (its timeout, or stop() giving up on it). */
  controller?: AbortController;
  /** stop() stopped waiting for it: nothing more is delivered for it in this run. */
  abandoned: boolean;
}

/** executeTask failed every try of a round (or the runtime stopped between tries); `stopping` when stop() cut it short. */
class TriesFailed extends Error {
  constructor(
    readonly code: "EXECUTION_FAILED" | "TASK_TIMEOUT",
    message: string,
    readonly stopping: boolean,
  ) {
    super(message);
  }
}

const describe = (error: unknown): { code: string; message: string } =>
  error instanceof ApiError || error instanceof TriesFailed
    ? { code: error.code, message: error.message }
    : { code: "EXECUTION_FAILED", message: (error as Error)?.message ?? String(error) };

/**
 * Turns an async function into a paid worker: registers the wallet as an agent, continues the tasks it already holds,
 * browses every 15 s and whenever a slot frees, accepts what it can open and is allowed to take (one accept per free
 * slot, all at once), runs `executeTask` (tried again with back-off when it throws or times out, the task handed back
 * when every try fails), delivers (signing its own evidence transaction) and finalizes, and delivers again after a
 * failed round while rounds remain.
 *
 * Refusals follow the spec's schedule: `NEEDS_WRAP` is bid on and retried every 5 s for 10 minutes without holding a
 * slot, then backed off up to a day; `BELOW_MIN_REWARD` is skipped for a day; `OFFER_HELD` waits for the window.
 */
export class WorkerRuntime {
  /** Holds the keys: an ES private field, so printing or serialising the runtime never shows them. */
  readonly #options: WorkerRuntimeOptions;
  private readonly client: MarketClient;
  private readonly clock: Clock;
  private readonly handlers: Array<(event: RuntimeEvent) => void> = [];
  private readonly executions = new Map<string, Execution>();
  /** Accepts sent and not answered yet: each holds a slot until it is, and stop() waits for them. */
  private readonly accepting = new Set<Promise<void>>();
  private readonly pending = new Map<string, Pending>();
  private readonly awaiting = new Map<string, Awaiting>();
  private readonly dropped = new Set<string>();
  /** Tasks an accept or a pick-up of an assignment is under way for (the stream's `task.assigned` leaves them). */
  private readonly claiming = new Set<string>();
  private readonly bids = new Set<string>();
  private browseHandle: unknown;
  /** A browse is under way; `browseAgain` asks for another right after it (a slot freed meanwhile). */
  private browsing = false;
  private browseAgain = false;
  /** Starts one more accept lane on the browse under way; false when it has no candidate left or no slot is free. */
  private addLane: (() => boolean) | undefined;
  /** After RATE_LIMITED: no accept (nor browse) before this time, the service's Retry-After. */
  private acceptsResumeAt = 0;
  /** After ASSIGNMENT_CAP_REACHED: the undelivered tasks the service lets this agent hold, as the refusal said. */
  private acceptCap: number | undefined;
  /** When an accept beyond `acceptCap` may be tried, to find whether the cap grew with the agent's record. */
  private capProbeAt = 0;
  private running = false;
  /** stop() stopped waiting: a task an accept still wins is left held (a restart resumes it), not worked. */
  private leaving = false;
  /** Aborted by stop(): wakes the back-off between tries. */
  private stopping = new AbortController();
  private profile?: AgentProfile;
  private readonly gas: ReturnType<typeof createGasGate>;

  constructor(options: WorkerRuntimeOptions) {
    const key = options.privateKey ?? options.existingPrivateKey;
    if (!key) {
      throw clientError(
        "PRIVATE_KEY_REQUIRED",
        "WorkerRuntime needs privateKey (or existingPrivateKey to restart without registering): the private key of the API key's wallet, which opens private briefs and signs the evidence of each delivery. It never leaves this process.",
      );
    }
    this.#options = options;
    this.clock = options.clock ?? systemClock;
    this.client = new MarketClient({
      apiKey: options.apiKey,
      baseUrl: options.baseUrl,
      executor: { privateKey: key, rpcUrls: options.rpcUrls, ...(options.beforeSend ? { beforeSend: options.beforeSend } : {}) },
      escrows: options.escrows,
      fetch: options.fetch,
    });
    this.gas = createGasGate({
      clock: this.clock,
      wallet: (chain) => this.client.wallet(chain),
      ...(options.gasSponsored ? { sponsored: options.gasSponsored } : {}),
      report: (error) => this.emit({ type: "error", error }),
    });
  }

  /** The chains this agent declares: those it has an RPC URL for. */
  get declaredChains(): ChainName[] {
    return CHAIN_NAMES.filter((chain) => Boolean(this.#options.rpcUrls[chain]));
  }

  /** Tasks held right now (accepted and not yet finalized). */
  get activeExecutions(): number {
    return this.executions.size;
  }

  /** The runtime's own view of each task it holds or bids on. */
  statuses(): Record<string, ExecutionStatus> {
    const out: Record<string, ExecutionStatus> = {};
    for (const taskHash of this.bids) out[taskHash] = "bidding";
    for (const [taskHash, e] of this.executions) out[taskHash] = e.status;
    return out;
  }

  on(handler: (event: RuntimeEvent) => void): this {
    this.handlers.push(handler);
    return this;
  }

  private emit(event: RuntimeEvent) {
    for (const handler of this.handlers) {
      try {
        handler(event);
      } catch (error) {
        if (event.type !== "error") this.emit({ type: "error", error: error as Error });
      }
    }
  }

  /**
   * Registers the wallet when its registration differs from these options (`registered` is emitted only then, so a
   * restart with the same options emits none; with `existingPrivateKey` it only checks the registration), continues
   * the tasks it holds (unless `resume` is false) and starts browsing.
   */
  async start(): Promise<AgentProfile> {
    if (this.declaredChains.length === 0) throw clientError("WRONG_RPC", "rpcUrls names no chain: there is no default RPC.");
    let registered = false;
    const privateKey = this.#options.privateKey;
    if (privateKey) {
      const address = await this.client.requireOwnKey(privateKey);
      const current = await this.registration(address);
      if (current && this.registeredAsAsked(current, privateKey)) this.profile = current;
      else {
        const { profile } = await this.client.createAgent({
          privateKey,
          supportedChains: this.declaredChains,
          capabilities: this.#options.capabilities ?? [],
          displayName: this.#options.displayName,
          minReward: this.#options.minReward,
        });
        this.profile = profile;
        registered = true;
      }
    } else {
      const address = await this.client.requireOwnKey(this.#options.existingPrivateKey!);
      const current = await this.registration(address);
      if (!current) throw clientError("EXECUTOR_NOT_FOUND", `${address} is not registered: start with privateKey to register it.`);
      this.profile = current;
    }
    this.running = true;
    this.leaving = false;
    this.stopping = new AbortController();
    if (registered) this.emit({ type: "registered", profile: this.profile });
    if (this.#options.resume ?? this.#options.resumeHeld ?? true) {
      await this.resumeAssigned().catch((error: unknown) => this.emit({ type: "error", error: error as Error }));
    }
    // The log's head is read before the first browse: a listing after it is streamed, one before it is browsed.
    const head = this.#options.followEvents === false ? undefined : await this.eventsHead();
    this.scheduleBrowse(0);
    if (head !== undefined) this.followEvents(head);
    return this.profile;
  }

  /** The wallet's registration, or undefined when it has none. */
  private async registration(address: string): Promise<AgentProfile | undefined> {
    try {
      return (await this.client.http.get<Partial<AgentAnswer>>(`/api/v1/a2a/executors/${address}`)).profile;
    } catch (error) {
      // Not registered (or a service without this read): registering answers for itself.
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Whether the registration already says what these options would register. */
  private registeredAsAsked(current: AgentProfile, privateKey: string): boolean {
    const set = (values: readonly string[] | null | undefined) => JSON.stringify([...new Set((values ?? []).map((v) => v.toLowerCase()))].sort());
    const minReward = this.#options.minReward;
    return (
      current.publicKey?.toLowerCase() === publicKeyFromPrivateKey(privateKey).toLowerCase() &&
      set(current.supportedChains) === set(this.declaredChains) &&
      set(current.capabilities) === set(this.#options.capabilities) &&
      (current.displayName ?? null) === (this.#options.displayName ?? null) &&
      (current.minReward ?? null) === (minReward === undefined ? null : minReward.toString())
    );
  }

  /**
   * Continues what the wallet holds (`GET /api/v1/a2a/tasks/assigned`): an assigned task (or a failed round with
   * rounds left) is worked and delivered, delivered evidence not finalized yet is finalized, a task awaiting its
   * verdict is followed. Each counts as held work, even beyond `maxConcurrentTasks`: the tasks are this agent's already.
   */
  private async resumeAssigned(): Promise<void> {
    const { tasks } = await this.client.assignedTasks();
    for (const task of tasks) {
      const taskHash = task.meta.taskHash;
      if (this.#options.skipTask?.(task) || this.executions.has(taskHash) || this.awaiting.has(taskHash)) continue;
      if (!this.declaredChains.includes(task.meta.chain)) continue;
      try {
        await this.resume(task, task.roundsLeft);
      } catch (error) {
        this.emit({ type: "task_failed", taskId: taskHash, error: describe(error) });
      }
    }
  }

  /** Picks one held task up where it stands. */
  private async resume(task: TaskView, roundsLeft: number): Promise<void> {
    const taskHash = task.meta.taskHash;
    const { status, rounds, resultData } = task.state;
    // Disputed or escalated (nothing for the worker to deliver), or past its deadline with nothing delivered.
    if (status !== "submitted" && status !== "awaiting_verification" && roundsLeft === 0) return;
    // Accepting a task the wallet already holds answers its assignment again (the brief, or how to open it).
    const assigned = await this.client.acceptTask(taskHash);
    const output = resultData?.output ?? "";
    const follow = async (round: number) => {
      this.awaiting.set(taskHash, { task, assigned, instructions: await this.client.openBrief(assigned), output, round });
    };
    const again = async (round: number, reasons: string[]) => {
      const instructions = await this.client.openBrief(assigned);
      this.emit({ type: "task_assigned", taskId: taskHash });
      this.execute(task, assigned, { task, assigned, instructions, output, round, previousAttempt: { output, reasons } });
    };
    if (status === "assigned") {
      this.execute(task, assigned);
    } else if (status === "submitted") {
      // Delivered and signed, never finalized: finalize now.
      const finalized = await this.client.finalize({ taskHash });
      const result = finalized.verificationResult;
      this.emit({
        type: "task_finalized",
        taskId: taskHash,
        finalize: { status: finalized.status, ...(result ? { verificationResult: { passed: result.passed, reasons: result.reasons } } : {}) },
      });
      if (finalized.status === "failed" && finalized.roundsLeft > 0 && this.mayResubmit(task)) await again(finalized.round, result?.reasons ?? []);
      else if (finalized.status === "awaiting_verification" || finalized.status === "submitted") await follow(finalized.round);
    } else if (status === "awaiting_verification") {
      await follow(rounds);
    } else if (status === "failed" && this.mayResubmit(task)) {
      const verdict = resultData?.verificationResult;
      // A poster's verdict shows with its reasons once recorded: until then follow it, so the next round gets them.
      if (!verdict && assigned.verification.mode === "manual") await follow(rounds);
      else {
        // The verdict came while the runtime was not running: reported now, like one it follows.
        const reasons = verdict?.reasons ?? [];
        this.emit({ type: "task_finalized", taskId: taskHash, finalize: { status: "failed", verificationResult: { passed: false, reasons } } });
        await again(rounds, reasons);
      }
    }
  }

  /** Whether a failed round of this task is delivered again (rentals not, when `resubmitRentals` is false). */
  private mayResubmit(task: TaskView): boolean {
    return this.#options.resubmitRentals !== false || task.meta.serviceId === undefined;
  }

  /**
   * Stops browsing and retrying, and waits for the work in flight for at most `timeoutMs` (default `stopTimeoutMs`,
   * 30 s): an accept already sent (a task it wins is assigned on chain, so it is worked on) and every task in hand,
   * delivered again after a failed round while rounds remain. Past that time it stops waiting: the tasks still in hand
   * are aborted (their `signal`), nothing more is delivered for them in this run, and the answer lists them (`left`);
   * they stay assigned to this wallet, and the next `start()` resumes them.
   */
  async stop(options: { timeoutMs?: number } = {}): Promise<StopReport> {
    this.running = false;
    this.stopping.abort();
    if (this.browseHandle !== undefined) this.clock.clearTimeout(this.browseHandle);
    this.browseHandle = undefined;
    for (const p of this.pending.values()) if (p.handle !== undefined) this.clock.clearTimeout(p.handle);
    this.pending.clear();
    const settled = (async () => {
      // An accept that wins starts a task, and a failed round starts another: wait until nothing is in flight.
      while (this.accepting.size > 0 || this.executions.size > 0) {
        await Promise.allSettled([...this.accepting]);
        await Promise.allSettled([...this.executions.values()].map((e) => e.done));
      }
      return true;
    })();
    let cancel = () => {};
    const timedOut = new Promise<false>(
      (resolve) => (cancel = after(this.clock, options.timeoutMs ?? this.#options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS, () => resolve(false))),
    );
    const finished = await Promise.race([settled, timedOut]);
    cancel();
    const left: StopReport["left"] = [];
    if (!finished) {
      this.leaving = true;
      for (const [taskId, execution] of this.executions) {
        execution.abandoned = true;
        execution.controller?.abort(clientError("EXECUTION_FAILED", "stop() stopped waiting for this task; a restart resumes it."));
        left.push({ taskId, status: execution.status });
      }
      this.executions.clear();
    }
    return { left, awaitingVerdict: [...this.awaiting.keys()].sort() };
  }

  /** Browses at once on each listing or release the stream shows; ends with stop(), or when the server has no stream. */
  /** The event log's head cursor, or undefined when the server has no event log (the runtime browses alone then). */
  private async eventsHead(): Promise<string | undefined> {
    try {
      const page = await eventPage({
        baseUrl: this.client.http.baseUrl,
        apiKey: this.#options.apiKey,
        ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
        after: "now",
        limit: 1,
      });
      return page.next;
    } catch {
      return undefined;
    }
  }

  private followEvents(after: string) {
    const signal = this.stopping.signal;
    void (async () => {
      try {
        const events = streamEvents({
          baseUrl: this.client.http.baseUrl,
          apiKey: this.#options.apiKey,
          ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
          after,
          types: ["task.listed", "task.released", "task.assigned"],
          signal,
        });
        for await (const event of events) {
          if (!this.running) return;
          if (event.type === "task.listed" || event.type === "task.released") this.refill();
          else if (
            event.type === "task.assigned" &&
            event.taskHash &&
            String(event.data.worker).toLowerCase() === this.profile?.address.toLowerCase()
          ) {
            this.takeAssigned(event.taskHash);
          }
        }
      } catch {
        // No stream here (an older server, a refusal): the interval's browse is the fallback.
      }
    })();
  }

  /**
   * A task assigned to this wallet without its own accept (a poster's `assignWorker`, a pinned task given to it): worked
   * at once, as a restart would resume it. One it is accepting, working or following already is left to that.
   */
  private takeAssigned(taskHash: string) {
    if (this.claiming.has(taskHash) || this.executions.has(taskHash) || this.awaiting.has(taskHash) || this.dropped.has(taskHash)) return;
    this.claiming.add(taskHash);
    void (async () => {
      try {
        const { tasks } = await this.client.assignedTasks();
        const task = tasks.find((t) => t.meta.taskHash.toLowerCase() === taskHash.toLowerCase());
        if (!task || !this.running || this.executions.has(task.meta.taskHash) || this.awaiting.has(task.meta.taskHash)) return;
        if (this.#options.skipTask?.(task) || !this.declaredChains.includes(task.meta.chain)) return;
        await this.resume(task, task.roundsLeft);
      } catch (error) {
        this.emit({ type: "error", error: error as Error });
      } finally {
        this.claiming.delete(taskHash);
      }
    })();
  }

  private scheduleBrowse(ms: number) {
    if (!this.running) return;
    if (this.browseHandle !== undefined) this.clock.clearTimeout(this.browseHandle);
    // Told to slow down (RATE_LIMITED): nothing is asked before the service's wait is over.
    ms = Math.max(ms, this.acceptsResumeAt - this.clock.now());
    this.browseHandle = this.clock.setTimeout(() => {
      this.browseHandle = undefined;
      this.browsing = true;
      this.browse()
        .catch((error: unknown) => this.emit({ type: "error", error: error as Error }))
        .finally(() => {
          this.browsing = false;
          const again = this.browseAgain && this.hasSlot();
          this.browseAgain = false;
          this.scheduleBrowse(again ? 0 : (this.#options.browseIntervalMs ?? RUNTIME_BROWSE_INTERVAL_MS));
        });
    }, ms);
  }

  /**
   * A task left its slot: it takes the next candidate of the browse under way, or browses again at once rather than on
   * the next tick (after the browse under way, if that has no candidate left).
   */
  private refill() {
    if (!this.running || !this.hasSlot()) return;
    if (!this.browsing) this.scheduleBrowse(0);
    else if (!this.addLane?.()) this.browseAgain = true;
  }

  private hasSlot(): boolean {
    if (this.#options.hasCapacity && !this.#options.hasCapacity()) return false;
    return this.executions.size + this.accepting.size < (this.#options.maxConcurrentTasks ?? 1);
  }

  /** One browse: follows the verdicts it waits for first (tasks in hand), then tries every open task it may take. */
  async browse(): Promise<void> {
    if (!this.running) return;
    await this.followVerdicts();
    const { tasks } = await this.client.browseA2ATasks({ capabilities: this.#options.capabilities ?? [] });
    const candidates = tasks
      .filter((t) => ![this.executions, this.awaiting, this.pending, this.dropped].some((held) => held.has(t.meta.taskHash)))
      .filter((t) => this.declaredChains.includes(t.meta.chain))
      .filter((t) => !this.#options.skipTask?.(t))
      // Criteria no output can meet (listed before the API refused them) would only fail rounds: never accepted.
      .filter((t) => !t.meta.verificationCriteria || unsatisfiable(t.meta.verificationCriteria as VerificationCriteria).length === 0)
      // Rentals of this agent's services first (a poster waits on each, with a one-hour deadline), then the best paid.
      .sort((a, b) => Number(this.isOwnRental(b)) - Number(this.isOwnRental(a)) || compareRewards(b, a));
    // One accept per free slot at a time, all slots at once: an accept waits for its assignment on chain, so taking
    // them one after another would leave the other slots idle for as long. A refused accept frees its slot for the
    // next candidate, and a slot that frees while this browse is under way takes the next candidate in a lane of its
    // own (refill), rather than waiting for a lane of the browse to come round to it.
    const lane = async () => {
      while (this.running && this.mayAccept() && candidates.length > 0) await this.tryAccept(candidates.shift()!);
    };
    const lanes = new Set<Promise<void>>();
    const failures: unknown[] = [];
    const startLane = () => {
      const run: Promise<void> = lane()
        .catch((error: unknown) => void failures.push(error))
        .finally(() => lanes.delete(run));
      lanes.add(run);
    };
    this.addLane = () => {
      if (!this.running || !this.mayAccept() || candidates.length === 0) return false;
      startLane();
      return true;
    };
    try {
      const free = (this.#options.maxConcurrentTasks ?? 1) - this.executions.size - this.accepting.size;
      for (let i = 0; i < free; i++) startLane();
      while (lanes.size > 0) await Promise.all([...lanes]);
    } finally {
      this.addLane = undefined;
    }
    if (failures.length > 0) throw failures[0];
  }

  /**
   * Whether another accept may be sent now: a slot is free, the service's wait after RATE_LIMITED is over, and the
   * tasks in hand are fewer than the assignment cap its last ASSIGNMENT_CAP_REACHED named (the cap grows with the
   * agent's record: one accept beyond it is tried every CAP_PROBE_INTERVAL_MS). A new agent's 20 slots would otherwise
   * send 20 accepts for a cap of 3 at every refill, and the refusals count against its accepts per minute, which then
   * refuse everything for the rest of the minute.
   */
  private mayAccept(): boolean {
    const now = this.clock.now();
    if (!this.hasSlot() || now < this.acceptsResumeAt) return false;
    return this.acceptCap === undefined || this.inHand() < this.acceptCap || now >= this.capProbeAt;
  }

  /** Accepts in flight and tasks in hand: at least what the service's assignment cap counts. */
  private inHand(): number {
    return this.accepting.size + this.executions.size;
  }

  /** A rental of one of this agent's services: pinned to it and linked to a service. */
  private isOwnRental(task: TaskView): boolean {
    return task.meta.serviceId !== undefined && task.meta.targetExecutor === this.profile?.address;
  }

  /** Accepts a task in a slot of its own while the accept is in flight. */
  private tryAccept(task: TaskView): Promise<void> {
    const beyondCap = this.acceptCap !== undefined && this.inHand() >= this.acceptCap;
    if (beyondCap) this.capProbeAt = this.clock.now() + CAP_PROBE_INTERVAL_MS;
    const attempt = this.accept(task).then((assigned) => {
      // Taken beyond the cap: it grew.
      if (assigned && beyondCap && this.acceptCap !== undefined) this.acceptCap += 1;
    });
    this.accepting.add(attempt);
    return attempt.finally(() => this.accepting.delete(attempt));
  }

  /** True when the task was assigned to this agent. */
  private async accept(task: TaskView): Promise<boolean> {
    const taskHash = task.meta.taskHash;
    this.claiming.add(taskHash);
    try {
      return await this.acceptClaimed(task);
    } finally {
      this.claiming.delete(taskHash);
    }
  }

  private async acceptClaimed(task: TaskView): Promise<boolean> {
    const taskHash = task.meta.taskHash;
    // A task it could not deliver (no gas for the evidence) is left to others; the next browse looks again.
    if (this.#options.checkGas !== false && !(await this.gas.ready(task.meta.chain))) return false;
    const retry = this.pending.has(taskHash);
    let assigned: AssignedTask;
    try {
      assigned = await this.client.acceptTask(taskHash);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      await this.refused(task, error);
      return false;
    }
    if (assigned.alreadyHeld && !retry) {
      // Held before this runtime asked, and not by a retry of its own: another runtime with this key took it and
      // works it. Two would race to deliver it (one refused on chain): this one leaves it and says so.
      this.dropped.add(taskHash);
      this.emit({
        type: "error",
        error: clientError(
          "KEY_SHARED",
          `Task ${taskHash} is held by another runtime working with this API key (${assigned.worker}); this one leaves it to that one. Run one runtime per key.`,
        ),
      });
      return false;
    }
    this.bids.delete(taskHash);
    this.pending.delete(taskHash);
    this.execute(task, assigned);
    return true;
  }

  /** Schedules, bids or drops after a refused accept; a retry holds no slot. */
  private async refused(task: TaskView, error: ApiError): Promise<void> {
    const taskHash = task.meta.taskHash;
    const now = this.clock.now();
    const previous = this.pending.get(taskHash);
    const plan = planAfterRefusal(error.code, now, previous?.wrap, error.body.details);
    if (error.code === "RATE_LIMITED") {
      const seconds = Number(error.body.details?.find((d) => typeof d.retryAfterSeconds === "number")?.retryAfterSeconds);
      this.acceptsResumeAt = Math.max(this.acceptsResumeAt, now + (Number.isFinite(seconds) ? seconds * 1000 : RATE_LIMITED_WAIT_MS));
      if (!this.browsing) this.scheduleBrowse(0); // at the end of the wait (a browse under way schedules its next one so)
    } else if (error.code === "ASSIGNMENT_CAP_REACHED") {
      const cap = Number(error.body.details?.find((d) => typeof d.cap === "number")?.cap);
      this.acceptCap = Number.isFinite(cap) ? cap : Math.max(1, this.inHand() - 1);
      this.capProbeAt = now + CAP_PROBE_INTERVAL_MS;
    }
    if (error.code === "NEEDS_WRAP" && !this.bids.has(taskHash)) {
      this.bids.add(taskHash);
      await this.client.bidOnTask({ taskHash }).catch((e: unknown) => this.emit({ type: "error", error: e as Error }));
    }
    if (plan.kind === "drop") {
      this.pending.delete(taskHash);
      this.bids.delete(taskHash);
      this.dropped.add(taskHash);
      this.emit({ type: "task_failed", taskId: taskHash, error: { code: error.code, message: error.message } });
      return;
    }
    if (plan.kind === "next-browse" || !this.running) {
      this.pending.delete(taskHash);
      return;
    }
    let wrap: WrapState | undefined;
    if (error.code === "NEEDS_WRAP") {
      wrap = previous?.wrap ?? { firstRefusedAt: now, slowRetries: 0 };
      if (now - wrap.firstRefusedAt >= 10 * 60_000) wrap = { ...wrap, slowRetries: wrap.slowRetries + 1 };
    }
    if (!previous)
      this.emit({
        type: "task_failed",
        taskId: taskHash,
        error: { code: error.code, message: `${error.message} (retrying in ${Math.round(plan.afterMs / 1000)} s)` },
      });
    const entry: Pending = { ...(wrap ? { wrap } : {}) };
    const fire = () => {
      if (!this.running || this.pending.get(taskHash) !== entry) return;
      // Retries hold no slot: with none free (or the service's limits in the way, see mayAccept), wait another interval.
      if (!this.mayAccept()) entry.handle = this.clock.setTimeout(fire, plan.afterMs);
      else this.tryAccept(task).catch((e: unknown) => this.emit({ type: "error", error: e as Error }));
    };
    entry.handle = this.clock.setTimeout(fire, plan.afterMs);
    this.pending.set(taskHash, entry);
  }

  /**
   * Asks after each delivered task waiting for the poster's (`manual`) or the verifier agent's (`agent`) verdict: a
   * pass or a final fail is reported, and a failed round is delivered again while rounds and time remain (in a slot,
   * before any new task). A verdict is looked at only while the runtime runs; `stop()` does not wait for one.
   */
  private async followVerdicts(): Promise<void> {
    for (const [taskHash, held] of this.awaiting) {
      if (!this.running) return;
      let state: TaskView["state"];
      try {
        ({ state } = await this.client.getTask(taskHash));
      } catch (error) {
        this.emit({ type: "error", error: error as Error });
        continue;
      }
      if (state.status === "awaiting_verification" || state.status === "submitted") continue;
      const verdict = state.resultData?.verificationResult;
      // The service records a poster's verdict, reasons and all, once the chain has settled it: a `manual` task may
      // show `failed` a moment before. Asked again at the next browse, so the next round gets the reasons.
      if (state.status === "failed" && !verdict && held.assigned.verification.mode === "manual") continue;
      const reasons = verdict?.reasons ?? [];
      // Another round while the escrow takes evidence (core/escrow: rounds unused before the deadline).
      const again =
        state.status === "failed" &&
        roundsUnused({ rounds: state.rounds, deadline: held.assigned.deadline }, this.clock.now()) > 0 &&
        this.mayResubmit(held.task);
      if (again && !this.hasSlot()) continue;
      this.awaiting.delete(taskHash);
      if (state.status !== "failed" && state.status !== "verified" && state.status !== "completed") continue; // disputed, refunded...
      const passed = state.status !== "failed";
      this.emit({ type: "task_finalized", taskId: taskHash, finalize: { status: state.status, verificationResult: { passed, reasons } } });
      if (again) this.execute(held.task, held.assigned, { ...held, round: state.rounds, previousAttempt: { output: held.output, reasons } });
    }
  }

  /**
   * Runs the task in its slot: open the brief, execute (tried again with back-off when it throws or times out),
   * deliver and finalize, again after a failed round; `resume` continues a task whose round failed on a verdict that
   * came later. A task whose tries all fail before its first delivery is handed back (`releaseFailed`).
   */
  private execute(
    task: TaskView,
    assigned: AssignedTask,
    resume?: Awaiting & { previousAttempt: NonNullable<TaskContext["previousAttempt"]> },
  ): void {
    const taskHash = task.meta.taskHash;
    if (this.leaving) {
      // Won by an accept stop() no longer waited for: held on chain, resumed by the next start().
      if (!resume) this.emit({ type: "task_assigned", taskId: taskHash });
      this.emit({
        type: "task_failed",
        taskId: taskHash,
        error: { code: "EXECUTION_FAILED", message: "The runtime stopped; a restart resumes it." },
      });
      return;
    }
    const record: Execution = { status: "assigned", done: Promise.resolve(), abandoned: false };
    this.executions.set(taskHash, record);
    if (!resume) this.emit({ type: "task_assigned", taskId: taskHash });
    record.done = (async () => {
      let round = (resume?.round ?? assigned.rounds) + 1;
      try {
        const instructions = resume?.instructions ?? (await this.client.openBrief(assigned));
        let previousAttempt: TaskContext["previousAttempt"] = resume?.previousAttempt;
        const { amount, unit } = task.meta.reward;
        for (; ; round++) {
          record.status = "working";
          const output = await this.runTries(record, {
            taskId: taskHash,
            instructions,
            privacy: assigned.brief.privacy,
            chain: assigned.chain,
            reward: {
              amount,
              amountRaw: BigInt(amount),
              decimal: formatDecimalAmount(BigInt(amount), unit.decimals),
              symbol: unit.symbol,
              decimals: unit.decimals,
            },
            capabilities: task.meta.requiredCapabilities,
            verification: {
              mode: assigned.verification.mode,
              ...(assigned.verification.criteria ? { criteria: assigned.verification.criteria } : {}),
            },
            deadline: assigned.deadline,
            round,
            ...(task.meta.serviceId === undefined ? {} : { serviceId: task.meta.serviceId }),
            ...(previousAttempt ? { previousAttempt } : {}),
          });
          record.status = "submitted";
          const finalized: Finalized = await this.client.deliverResult({ taskHash, output });
          const result = finalized.verificationResult;
          // Every finalized delivery is reported, a failed round too (passed false): the task was delivered.
          this.emit({
            type: "task_finalized",
            taskId: taskHash,
            finalize: { status: finalized.status, ...(result ? { verificationResult: { passed: result.passed, reasons: result.reasons } } : {}) },
          });
          // Also while stopping: the task is held, and stop() finishes the tasks in hand.
          if (finalized.status === "failed" && finalized.roundsLeft > 0 && this.mayResubmit(task) && !record.abandoned) {
            previousAttempt = { output, reasons: result?.reasons ?? [] };
            continue;
          }
          // Judged later by the poster or the verifier agent: followed at every browse, without a slot.
          if (finalized.status === "awaiting_verification" || finalized.status === "submitted") {
            this.awaiting.set(taskHash, { task, assigned, instructions, output, round });
          }
          return;
        }
      } catch (error) {
        let released = false;
        // Never delivered and given up on while running: hand it back so the poster's task opens again.
        if (error instanceof TriesFailed && !error.stopping && round === 1 && this.running && this.#options.releaseFailed !== false) {
          try {
            await this.client.settle({ taskHash, action: "release" });
            released = true;
            this.dropped.add(taskHash);
          } catch (releaseError) {
            this.emit({ type: "error", error: releaseError as Error });
          }
        }
        // Otherwise held but undelivered: the task stays assigned to this agent on chain (a restart resumes it).
        this.emit({ type: "task_failed", taskId: taskHash, error: describe(error), ...(released ? { released } : {}) });
      } finally {
        if (this.executions.get(taskHash) === record) this.executions.delete(taskHash);
        this.refill();
      }
    })();
  }

  /**
   * One round's executeTask, tried up to `executeAttempts` times: each try is bounded by `taskTimeoutMs` and the
   * deadline (its signal aborts then), and a failed try is followed by a back-off (`retryDelayMs`, doubling) unless
   * the next try could not start before the deadline. Stopping ends the tries; a try stop() gave up on is never retried.
   */
  private async runTries(record: Execution, context: Omit<TaskContext, "attempt" | "signal">): Promise<string> {
    const tries = Math.max(1, Math.floor(this.#options.executeAttempts ?? DEFAULT_EXECUTE_ATTEMPTS));
    const deadlineMs = context.deadline;
    let last: { code: "EXECUTION_FAILED" | "TASK_TIMEOUT"; message: string } = { code: "TASK_TIMEOUT", message: "The task's deadline has passed." };
    let made = 0;
    while (made < tries) {
      const left = deadlineMs - this.clock.now();
      if (left <= 0) {
        last = { code: "TASK_TIMEOUT", message: "The task's deadline has passed." };
        break;
      }
      made++;
      const budget = Math.min(this.#options.taskTimeoutMs ?? Infinity, left);
      const controller = new AbortController();
      record.controller = controller;
      const timeout = `executeTask ran past ${budget === left ? "the task's deadline" : `taskTimeoutMs (${budget} ms)`}`;
      const cancel = after(this.clock, budget, () => controller.abort(clientError("TASK_TIMEOUT", timeout)));
      try {
        const run = Promise.resolve().then(() => this.#options.executeTask({ ...context, attempt: made, signal: controller.signal }));
        const output = (await untilAborted(run, controller.signal))?.output;
        if (typeof output !== "string" || output.length === 0) throw new Error("executeTask must return { output } with a non-empty string.");
        if (record.abandoned) {
          last = { code: "EXECUTION_FAILED", message: "stop() stopped waiting for this task; a restart resumes it." };
          break;
        }
        return output;
      } catch (error) {
        const timedOut = error instanceof ApiError && error.code === "TASK_TIMEOUT";
        last = { code: timedOut ? "TASK_TIMEOUT" : "EXECUTION_FAILED", message: describe(error).message };
      } finally {
        cancel();
        record.controller = undefined;
      }
      if (record.abandoned || !this.running || made >= tries) break;
      const wait = (this.#options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS) * 2 ** (made - 1);
      if (this.clock.now() + wait >= deadlineMs) break;
      await sleep(this.clock, wait, this.stopping.signal);
      if (!this.running) break;
    }
    const stopping = record.abandoned || !this.running;
    throw new TriesFailed(last.code, `executeTask failed ${made} time(s); the last: ${last.message}`, stopping);
  }
}

import { expect } from "chai";
import { getAddress, id, ZeroAddress, ZeroHash, type EventFragment, type ParamType } from "ethers";
import {
  applyStateEvent,
  applyTaskEvent,
  decodeEscrowEvent,
  decodeEscrowLog,
  Ending,
  escrowEventNames,
  EscrowStatus,
  shiftForPause,
  snapshotOf,
  storedEscrowEvent,
  UNKNOWN_EVENT,
  windowEndsAt,
  type EscrowEventName,
  type EscrowLog,
  type EscrowState,
  type ProjectedTask,
} from "@market/core/escrow";
import { APPEAL_WINDOW_SECONDS, RULING_WINDOW_SECONDS } from "@market/core/limits";
import { TaskEscrow__factory } from "../../typechain-types";

const escrowAbi = TaskEscrow__factory.createInterface();

/** A value as ethers decodes it, as the indexer stores it: integers as decimal strings, the rest as it is. */
const stored = (value: unknown) => (typeof value === "bigint" ? value.toString() : value);
const address = (label: string) => getAddress(id(label).slice(0, 42));

/**
 * Every event of the bindings, named once: the compiler refuses a name the bindings lack and a missing one, so this
 * list is the typed union's, and the test below holds it to the ABI the decoder reads.
 */
const TYPED: Record<EscrowEventName, true> = {
  AdminProposed: true,
  AdminTransferred: true,
  CreditWithdrawn: true,
  Credited: true,
  DeadlineExpired: true,
  DisputeRaised: true,
  DisputeResolved: true,
  EscrowPausedAt: true,
  EscrowUnpaused: true,
  EvidenceSubmitted: true,
  FeeUpdated: true,
  FeesSwept: true,
  Initialized: true,
  ReputationRegistryUpdated: true,
  ReputationWriteFailed: true,
  SurplusRescued: true,
  TaskCancelled: true,
  TaskCompleted: true,
  TaskCreated: true,
  TaskRefunded: true,
  TokenAllowed: true,
  TreasuryUpdated: true,
  UnjudgedWorkEscalated: true,
  Upgraded: true,
  VerificationCompleted: true,
  VerifierUpdated: true,
  WorkerAssigned: true,
  WorkerReleased: true,
};

/** A sample value of an ABI type, and how the decoder stores it. */
function sample(param: ParamType, seed: number): { value: unknown; stored: string | boolean } {
  if (param.type === "address") {
    const value = address(`${param.name} ${seed}`);
    return { value, stored: value };
  }
  if (param.type === "bool") return { value: seed % 2 === 0, stored: seed % 2 === 0 };
  if (param.type === "bytes32") {
    const value = id(`${param.name} ${seed}`);
    return { value, stored: value };
  }
  if (param.type === "bytes") {
    const value = id(`${param.name} ${seed}`).slice(0, 2 + 2 * (1 + (seed % 40)));
    return { value, stored: value };
  }
  if (param.type.startsWith("uint")) {
    const bits = Number(param.type.slice(4));
    const value = (1n << BigInt(bits)) - 1n - BigInt(seed);
    return { value, stored: value.toString() };
  }
  throw new Error(`no sample for ${param.type}`);
}

function encoded(fragment: EventFragment, seed: number) {
  const samples = fragment.inputs.map((input, i) => sample(input, seed + i));
  const log = escrowAbi.encodeEventLog(
    fragment,
    samples.map((s) => s.value),
  );
  const stored = Object.fromEntries(fragment.inputs.map((input, i) => [input.name, samples[i]!.stored]));
  return { ...log, stored };
}

const at = (blockNumber: number, blockTime: number, logIndex = 0) => ({
  chain: "arc",
  blockNumber,
  blockHash: id(`block ${blockNumber}`),
  logIndex,
  txHash: id(`tx ${blockNumber}`),
  txIndex: 0,
  blockTime,
});

/** A log of `name` with these arguments, encoded by the ABI and decoded by core/escrow. */
function logOf(name: EscrowEventName, args: Record<string, unknown>, blockNumber: number, blockTime: number): EscrowLog {
  const fragment = escrowAbi.getEvent(name);
  const { topics, data } = escrowAbi.encodeEventLog(
    fragment,
    fragment.inputs.map((input) => args[input.name]),
  );
  return decodeEscrowLog(at(blockNumber, blockTime), topics, data);
}

describe("core/escrow events", function () {
  it("the typed union names exactly the events of the escrow's ABI", function () {
    expect(Object.keys(TYPED).sort()).to.deep.equal(escrowEventNames().sort());
  });

  it("decodes every event of the ABI to its inputs: decimal strings, checksummed addresses, booleans, hex", function () {
    let seed = 0;
    escrowAbi.forEachEvent((fragment) => {
      const { topics, data, stored } = encoded(fragment, (seed += 7));
      const event = decodeEscrowEvent(topics, data);
      expect(event, fragment.name).to.deep.equal({ event: fragment.name, args: stored });
      // What is stored reads back as the same event.
      expect(storedEscrowEvent(fragment.name, JSON.parse(JSON.stringify(event!.args))), fragment.name).to.deep.equal(event);
    });
  });

  it("agrees with ethers' generic Interface.parseLog on every event kind, at the edges of each type", function () {
    // Integers at 0, 1, around 2^52 and 2^53 (where the decoder leaves JavaScript numbers for BigInt) and at the type's
    // maximum; addresses zero, small and random; both booleans; byte strings of several lengths.
    const edges = (param: ParamType, k: number): unknown => {
      if (param.type === "address") return [ZeroAddress, getAddress(`0x${"0".repeat(39)}1`), address(`${param.name} ${k}`)][k % 3];
      if (param.type === "bool") return k % 2 === 1;
      if (param.type === "bytes32") return [ZeroHash, id(`${param.name} ${k}`)][k % 2];
      if (param.type === "bytes") return id(`${param.name} ${k}`).slice(0, 2 + 2 * [0, 1, 31, 32][k % 4]!) + (k % 4 === 3 ? "ff" : "");
      const bits = BigInt(param.type.slice(4));
      const values = [0n, 1n, 1_000_000n, 2n ** 52n - 1n, 2n ** 52n, 2n ** 53n + 1n, 2n ** bits - 1n].filter((v) => v < 2n ** bits);
      return values[k % values.length];
    };
    let logs = 0;
    escrowAbi.forEachEvent((fragment) => {
      for (let k = 0; k < 14; k++) {
        const { topics, data } = escrowAbi.encodeEventLog(
          fragment,
          fragment.inputs.map((input, i) => edges(input, k + i)),
        );
        const parsed = escrowAbi.parseLog({ topics, data })!;
        const generic = {
          event: parsed.name,
          args: Object.fromEntries(fragment.inputs.map((input, i) => [input.name, stored(parsed.args[i])])),
        };
        expect(decodeEscrowEvent(topics, data), `${fragment.name} ${k}`).to.deep.equal(generic);
        // Hex as a node may send it, in capitals: the same event.
        const upper = (hex: string) => `0x${hex.slice(2).toUpperCase()}`;
        expect(decodeEscrowEvent([topics[0]!, ...topics.slice(1).map(upper)], upper(data)), `${fragment.name} ${k} (capitals)`).to.deep.equal(
          generic,
        );
        logs++;
      }
    });
    expect(logs).to.equal(14 * escrowEventNames().length);
  });

  it("keeps a log whose words are not hex as Unknown", function () {
    const fragment = escrowAbi.getEvent("TaskCreated");
    const { topics, data } = encoded(fragment, 3);
    expect(decodeEscrowEvent(topics, data)).to.not.equal(undefined);
    expect(decodeEscrowEvent(topics, `${data.slice(0, -1)}g`)).to.equal(undefined);
    expect(decodeEscrowEvent([topics[0]!, `${topics[1]!.slice(0, -1)}z`, ...topics.slice(2)], data)).to.equal(undefined);
    expect(decodeEscrowEvent([topics[0]!, topics[1]!.slice(0, -2), ...topics.slice(2)], data)).to.equal(undefined);
    expect(decodeEscrowLog(at(1, 100), topics, `${data.slice(0, -1)}g`)).to.include({ event: UNKNOWN_EVENT, taskHash: null });
  });

  it("keeps a log the ABI does not know as Unknown, with its raw topics and data", function () {
    const topics = [id("Other(uint256)"), id("x")];
    expect(decodeEscrowEvent(topics, "0x")).to.equal(undefined);
    const log = decodeEscrowLog(at(1, 100), topics, "0x01");
    expect(log).to.include({ event: UNKNOWN_EVENT, taskHash: null });
    expect(log.args).to.deep.equal({ topics: topics.join(","), data: "0x01" });
    expect(storedEscrowEvent(UNKNOWN_EVENT, log.args)).to.deep.equal({ event: UNKNOWN_EVENT, args: log.args });
  });

  it("refuses data that does not fit the event (kept raw), and a stored row that does not fit its ABI", function () {
    const fragment = escrowAbi.getEvent("FeeUpdated");
    const { topics } = encoded(fragment, 1);
    expect(decodeEscrowEvent(topics, "0x1234")).to.equal(undefined);
    expect(() => storedEscrowEvent("FeeUpdated", { feeBps: "1" })).to.throw(/does not match/);
    expect(() => storedEscrowEvent("FeeUpdated", { previousFeeBps: 1, feeBps: "1" })).to.throw(/does not match/);
    expect(() => storedEscrowEvent("NoSuchEvent", {})).to.throw(/does not match/);
  });

  it("sets a log's task hash from its event, null for escrow-wide events", function () {
    const task = id("task");
    expect(logOf("DisputeRaised", { taskHash: task, raisedBy: address("poster") }, 1, 100).taskHash).to.equal(task);
    expect(logOf("FeeUpdated", { previousFeeBps: 0, feeBps: 1_000 }, 1, 100).taskHash).to.equal(null);
  });
});

describe("core/escrow fold", function () {
  const hash = id("folded task");
  const poster = address("poster");
  const worker = address("worker");
  const verifierKey = address("marketplace verifier");
  const token = address("token");
  const deadline = 1_800_000_000;

  function created(): ProjectedTask {
    const zero = "0x0000000000000000000000000000000000000000";
    const log = logOf("TaskCreated", { taskHash: hash, poster, token, amount: 10_000_000n, deadline, verifier: zero }, 10, deadline - 86_400);
    return applyTaskEvent(undefined, log)!;
  }

  it("creates the task from TaskCreated; events of a task it never saw change nothing", function () {
    expect(created()).to.deep.equal({
      chain: "arc",
      taskHash: hash,
      poster,
      token,
      amount: 10_000_000n,
      verifier: null,
      worker: null,
      assignedBy: null,
      deadline,
      status: EscrowStatus.Funded,
      rounds: 0,
      ending: Ending.None,
      resultHash: null,
      phaseAt: null,
      lastScore: null,
      payout: null,
      fee: null,
      createdBlock: 10,
      createdTx: id("tx 10"),
      updatedBlock: 10,
    });
    expect(applyTaskEvent(undefined, logOf("DisputeRaised", { taskHash: hash, raisedBy: poster }, 11, 0))).to.equal(undefined);
  });

  it("follows a task through assignment, a failed round, a dispute and a ruling for the worker", function () {
    let task = created();
    task = applyTaskEvent(task, logOf("WorkerAssigned", { taskHash: hash, worker, assignedBy: verifierKey }, 11, 1))!;
    expect(task).to.include({ worker, assignedBy: verifierKey, status: EscrowStatus.Assigned, updatedBlock: 11 });
    const result = id("result");
    task = applyTaskEvent(task, logOf("EvidenceSubmitted", { taskHash: hash, worker, resultHash: result, round: 1 }, 12, 2))!;
    expect(task).to.include({ status: EscrowStatus.Submitted, rounds: 1, resultHash: result });
    const failedAt = deadline - 3_600;
    task = applyTaskEvent(
      task,
      logOf("VerificationCompleted", { taskHash: hash, verifier: verifierKey, passed: false, score: 12, round: 1 }, 13, failedAt),
    )!;
    expect(task).to.include({ status: EscrowStatus.Failed, lastScore: 12, phaseAt: failedAt });
    expect(windowEndsAt(task)).to.equal(failedAt + APPEAL_WINDOW_SECONDS);
    expect(snapshotOf(task)).to.deep.equal({
      taskHash: hash,
      poster,
      worker,
      verifier: null,
      status: EscrowStatus.Failed,
      rounds: 1,
      deadline,
      windowEndsAt: failedAt + APPEAL_WINDOW_SECONDS,
    });
    const disputedAt = failedAt + 60;
    task = applyTaskEvent(task, logOf("DisputeRaised", { taskHash: hash, raisedBy: worker }, 14, disputedAt))!;
    expect(task).to.include({ status: EscrowStatus.Disputed, phaseAt: disputedAt });
    expect(windowEndsAt(task)).to.equal(disputedAt + RULING_WINDOW_SECONDS);
    const ruling = logOf("DisputeResolved", { taskHash: hash, workerWins: true }, 15, disputedAt + 1);
    expect(applyTaskEvent(task, ruling), "a ruling changes nothing until its ending event").to.equal(task);
    task = applyTaskEvent(
      task,
      logOf("TaskCompleted", { taskHash: hash, worker, payout: 9_000_000n, fee: 1_000_000n, ending: Ending.DisputeWonByWorker }, 15, disputedAt + 1),
    )!;
    expect(task).to.include({ status: EscrowStatus.Paid, ending: Ending.DisputeWonByWorker, payout: 9_000_000n, fee: 1_000_000n });
  });

  it("a window never ends before the deadline, except an escalation's", function () {
    const early = deadline - 10 * 86_400;
    expect(windowEndsAt({ status: EscrowStatus.Failed, deadline, phaseAt: early })).to.equal(deadline);
    expect(windowEndsAt({ status: EscrowStatus.Disputed, deadline, phaseAt: early - 10 * 86_400 })).to.equal(deadline);
    expect(windowEndsAt({ status: EscrowStatus.Escalated, deadline, phaseAt: deadline + 5 })).to.equal(deadline + 5 + RULING_WINDOW_SECONDS);
    expect(windowEndsAt({ status: EscrowStatus.Assigned, deadline, phaseAt: null })).to.equal(0);
  });

  it("a finished pause moves a live task's deadline and window, never an ended task's", function () {
    const live = { ...created(), status: EscrowStatus.Failed, phaseAt: deadline - 5 };
    expect(shiftForPause(live, 100)).to.include({ deadline: deadline + 100, phaseAt: deadline + 95 });
    const ended = { ...created(), status: EscrowStatus.Cancelled, ending: Ending.CancelledWhileOpen };
    expect(shiftForPause(ended, 100)).to.equal(ended);
    expect(shiftForPause(undefined, 100)).to.equal(undefined);
  });

  it("folds the fee and the pause into the escrow-wide state", function () {
    let state: EscrowState | undefined;
    state = applyStateEvent(state, logOf("FeeUpdated", { previousFeeBps: 0, feeBps: 1_000 }, 1, 100));
    expect(state).to.deep.equal({ pausedAt: null, totalPaused: 0, feeBps: 1_000 });
    state = applyStateEvent(state, logOf("EscrowPausedAt", { at: 500 }, 2, 500));
    expect(state).to.deep.equal({ pausedAt: 500, totalPaused: 0, feeBps: 1_000 });
    state = applyStateEvent(state, logOf("EscrowUnpaused", { pausedFor: 70, totalPaused: 70 }, 3, 570));
    expect(state).to.deep.equal({ pausedAt: null, totalPaused: 70, feeBps: 1_000 });
    expect(applyStateEvent(state, logOf("TokenAllowed", { token, allowed: true }, 4, 600))).to.equal(state);
  });
});

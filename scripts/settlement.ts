/**
 * Settlement operations from the command line, as Hardhat tasks:
 *   npx hardhat --network <network> escrow:<operation> [--task <hash>] [--from <address>] ...
 * Each prints the transaction hash and the resulting state. A call that would revert is simulated first: the decoded
 * custom error is printed and the command exits non-zero without sending anything.
 *
 * Signer: `--from <address>` picks one of the network's accounts; otherwise PRIVATE_KEY, else the first account.
 * Escrow: `--escrow <address>`, else deployments/<network>.json.
 *
 * Loaded by hardhat.config.ts, so nothing here may import the generated bindings at module load (they do not exist
 * before the first compile).
 */
import { task, types } from "hardhat/config";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { Contract, formatUnits, getAddress, type ContractTransactionResponse, type Signer } from "ethers";
import type { TaskEscrow } from "../typechain-types";

interface CommonArgs {
  escrow?: string;
  from?: string;
}

async function connect(hre: HardhatRuntimeEnvironment, args: CommonArgs): Promise<{ escrow: TaskEscrow; signer: Signer }> {
  const { readDeployment } = await import("../deploy/deployments");
  const { TaskEscrow__factory } = await import("../typechain-types");
  const address = args.escrow ?? readDeployment(hre.network.name)?.proxy;
  if (!address) throw new UsageError(`no escrow given (--escrow) or recorded in deployments/${hre.network.name}.json`);
  const signer = await pickSigner(hre, args.from);
  return { escrow: TaskEscrow__factory.connect(address, signer), signer };
}

async function pickSigner(hre: HardhatRuntimeEnvironment, from: string | undefined): Promise<Signer> {
  const signers = await hre.ethers.getSigners();
  if (from) {
    const wanted = hre.ethers.getAddress(from);
    const found = signers.find((s) => s.address === wanted);
    if (found) return found;
    const key = process.env.PRIVATE_KEY;
    if (key && new hre.ethers.Wallet(key).address === wanted) return new hre.ethers.Wallet(key, hre.ethers.provider);
    throw new UsageError(`no key for ${wanted} on network ${hre.network.name}`);
  }
  if (process.env.PRIVATE_KEY) return new hre.ethers.Wallet(process.env.PRIVATE_KEY, hre.ethers.provider);
  const first = signers[0];
  if (!first) throw new UsageError(`no account configured for network ${hre.network.name}`);
  return first;
}

class UsageError extends Error {}

const ADDRESS_ARGS = ["escrow", "from", "token", "admin"] as const;

/**
 * Refuses malformed arguments before anything is read or sent, with one clear line: a task hash is 0x + 64 hex, an
 * address is 0x + 40 hex (any case; a mixed-case one must carry a valid checksum). Names (ENS) are not resolved.
 */
export function checkArgs(args: Record<string, unknown>): void {
  const task = args.task;
  if (task !== undefined && (typeof task !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(task))) {
    throw new UsageError(`--task must be a task hash (0x + 64 hex characters), got ${JSON.stringify(task)}`);
  }
  for (const name of ADDRESS_ARGS) {
    const value = args[name];
    if (value === undefined) continue;
    if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value)) {
      throw new UsageError(`--${name} must be an address (0x + 40 hex characters), got ${JSON.stringify(value)}`);
    }
    try {
      getAddress(value);
    } catch {
      throw new UsageError(`--${name} ${value} has a bad checksum (mixed case): check the address or write it in lower case`);
    }
  }
}

/**
 * Simulates, then sends; prints the hash, or the decoded custom error and sets a non-zero exit. A transaction that
 * still fails after a clean simulation (the chain moved in between) is reported the same way.
 */
export async function send(
  escrow: TaskEscrow,
  label: string,
  simulate: () => Promise<unknown>,
  submit: () => Promise<ContractTransactionResponse>,
): Promise<boolean> {
  const { describeRevert } = await import("@market/core/revert");
  const refuse = (what: string, error: unknown) => {
    console.error(`${label} ${what}: ${describeRevert(escrow.interface, error)}`);
    process.exitCode = 1;
    return false;
  };
  try {
    await simulate();
  } catch (error) {
    return refuse("would revert", error);
  }
  let tx: ContractTransactionResponse | undefined;
  try {
    tx = await submit();
    const receipt = await tx.wait();
    console.log(`${label}: transaction ${tx.hash} (block ${receipt?.blockNumber}, gas ${receipt?.gasUsed})`);
    return true;
  } catch (error) {
    return refuse(tx ? `reverted in transaction ${tx.hash}` : "was refused when sent", error);
  }
}

/** `amount` in the token's units with its symbol (`2.5 USDC`), and raw; raw only when the token does not say. */
async function tokenAmount(escrow: TaskEscrow, token: string, amount: bigint): Promise<string> {
  const erc20 = new Contract(token, ["function decimals() view returns (uint8)", "function symbol() view returns (string)"], escrow.runner);
  try {
    const [decimals, symbol] = await Promise.all([
      erc20.getFunction("decimals")() as Promise<bigint>,
      erc20.getFunction("symbol")() as Promise<string>,
    ]);
    return `${formatUnits(amount, decimals)} ${symbol} (${amount} raw)`;
  } catch {
    return `${amount} raw`;
  }
}

async function printTask(escrow: TaskEscrow, taskHash: string) {
  const { statusName, endingName } = await import("@market/core/escrow");
  const t = await escrow.getTask(taskHash);
  if (t.poster === "0x0000000000000000000000000000000000000000") {
    console.log(`task ${taskHash}: not found`);
    return;
  }
  const when = (s: bigint) => (s === 0n ? "-" : `${new Date(Number(s) * 1000).toISOString()} (${s})`);
  console.log(
    [
      `task        ${taskHash}`,
      `status      ${statusName(t.status)} (${t.status})`,
      `ending      ${endingName(t.ending)}`,
      `poster      ${t.poster}`,
      `worker      ${t.worker}`,
      `verifier    ${t.verifier === "0x0000000000000000000000000000000000000000" ? "marketplace verifier" : t.verifier}`,
      `token       ${t.token}`,
      `amount      ${await tokenAmount(escrow, t.token, t.amount)}`,
      `deadline    ${when(t.deadline)}`,
      `window end  ${when(t.windowEndsAt)}`,
      `rounds      ${t.rounds} of 3`,
    ].join("\n"),
  );
}

async function printConfig(escrow: TaskEscrow) {
  const [admin, pending, verifier, treasury, feeBps, paused, totalPaused, version] = await Promise.all([
    escrow.admin(),
    escrow.pendingAdmin(),
    escrow.verifier(),
    escrow.treasury(),
    escrow.feeBps(),
    escrow.paused(),
    escrow.totalPaused(),
    escrow.version(),
  ]);
  console.log(
    [
      `escrow      ${await escrow.getAddress()} (v${version})`,
      `admin       ${admin}${pending !== "0x0000000000000000000000000000000000000000" ? ` (proposed: ${pending})` : ""}`,
      `verifier    ${verifier}`,
      `treasury    ${treasury}`,
      `fee         ${feeBps} bps`,
      `paused      ${paused} (paused so far: ${totalPaused} s)`,
    ].join("\n"),
  );
}

/** Registers a task whose action runs `body`, turning usage errors into a message and a non-zero exit. */
function escrowTask<A extends CommonArgs>(
  name: string,
  description: string,
  body: (args: A, ctx: { hre: HardhatRuntimeEnvironment; escrow: TaskEscrow; signer: Signer }) => Promise<void>,
) {
  return task(name, description)
    .addOptionalParam("escrow", "Escrow proxy address (default: deployments/<network>.json)")
    .addOptionalParam("from", "Sender address among the network's accounts (default: PRIVATE_KEY or the first)")
    .setAction(async (args: A, hre) => {
      try {
        checkArgs(args as A & Record<string, unknown>);
        const { escrow, signer } = await connect(hre, args);
        await body(args, { hre, escrow, signer });
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        console.error(error.message);
        process.exitCode = 1;
      }
    });
}

type TaskArgs = CommonArgs & { task: string };

/** A poster/worker/admin operation on one task: simulate, send, print the task. */
function taskOperation(
  name: string,
  description: string,
  call: (
    escrow: TaskEscrow,
    taskHash: string,
    args: TaskArgs & Record<string, unknown>,
  ) => {
    simulate: () => Promise<unknown>;
    submit: () => Promise<ContractTransactionResponse>;
  },
) {
  return escrowTask<TaskArgs & Record<string, unknown>>(name, description, async (args, { escrow }) => {
    const { simulate, submit } = call(escrow, args.task, args);
    if (await send(escrow, name, simulate, submit)) await printTask(escrow, args.task);
  }).addParam("task", "Task hash (0x + 64 hex)");
}

escrowTask<TaskArgs>("escrow:status", "Prints a task's on-chain state (or the escrow's settings without --task)", async (args, { escrow }) => {
  if (args.task) await printTask(escrow, args.task);
  else await printConfig(escrow);
}).addOptionalParam("task", "Task hash (0x + 64 hex)");

taskOperation("escrow:cancel", "Poster cancels a Funded task (100% refund)", (e, h) => ({
  simulate: () => e.cancelTask.staticCall(h),
  submit: () => e.cancelTask(h),
}));

taskOperation("escrow:claim-timeout", "Poster refunds or escalates after the deadline", (e, h) => ({
  simulate: () => e.claimTimeout.staticCall(h),
  submit: () => e.claimTimeout(h),
}));

taskOperation("escrow:raise-dispute", "Poster or worker puts the task under dispute", (e, h) => ({
  simulate: () => e.raiseDispute.staticCall(h),
  submit: () => e.raiseDispute(h),
}));

taskOperation("escrow:resolve-dispute", "Admin rules on a disputed or escalated task", (e, h, args) => {
  const workerWins = args.workerWins as boolean;
  return {
    simulate: () => e.resolveDispute.staticCall(h, workerWins),
    submit: () => e.resolveDispute(h, workerWins),
  };
}).addParam("workerWins", "true pays the worker (fee applies), false refunds the poster", undefined, types.boolean);

/** Blocks per log query of escrow:disputes (RPC providers limit the range of one eth_getLogs). */
const LOG_RANGE_BLOCKS = 10_000;

escrowTask<CommonArgs & { fromBlock?: number }>(
  "escrow:disputes",
  "Lists disputed and escalated tasks awaiting the admin's ruling, most urgent first (the admin's duty: rule before the window ends)",
  async (args, { hre, escrow }) => {
    const { actsOn, EscrowStatus, statusName, toEscrowStatus } = await import("@market/core/escrow");
    const { readDeployment } = await import("../deploy/deployments");
    const provider = hre.ethers.provider;
    const start = args.fromBlock ?? readDeployment(hre.network.name)?.block ?? 0;
    const head = await provider.getBlockNumber();
    // Every task that was ever disputed or escalated, with who raised its dispute; the escrow says which still wait.
    const raisedBy = new Map<string, string | null>();
    for (let from = start; from <= head; from += LOG_RANGE_BLOCKS) {
      const to = Math.min(head, from + LOG_RANGE_BLOCKS - 1);
      for (const log of await escrow.queryFilter(escrow.filters.DisputeRaised(), from, to)) raisedBy.set(log.args.taskHash, log.args.raisedBy);
      for (const log of await escrow.queryFilter(escrow.filters.UnjudgedWorkEscalated(), from, to)) {
        if (!raisedBy.has(log.args.taskHash)) raisedBy.set(log.args.taskHash, null);
      }
    }
    const now = (await provider.getBlock("latest"))?.timestamp ?? Math.floor(Date.now() / 1000);
    const waiting = [];
    for (const [taskHash, by] of raisedBy) {
      const t = await escrow.getTask(taskHash);
      const status = Number(t.status);
      // What a ruling acts on (core/escrow): disputed and escalated tasks.
      if (!actsOn("resolveDispute", toEscrowStatus(status))) continue;
      waiting.push({ taskHash, status, by, t, ruleBy: Number(t.windowEndsAt) });
    }
    waiting.sort((a, b) => a.ruleBy - b.ruleBy || a.taskHash.localeCompare(b.taskHash));
    const iso = (s: number) => new Date(s * 1000).toISOString();
    const span = (seconds: number) => `${Math.floor(seconds / 86_400)}d ${Math.floor((seconds % 86_400) / 3_600)}h`;
    console.log(
      `${waiting.length} task${waiting.length === 1 ? "" : "s"} awaiting the admin's ruling on ${await escrow.getAddress()} (blocks ${start} to ${head}; chain time ${iso(now)})`,
    );
    for (const w of waiting) {
      const left = w.ruleBy - now;
      const due =
        left > 0
          ? `rule by ${iso(w.ruleBy)} (${span(left)} left)`
          : `OVERDUE since ${iso(w.ruleBy)}: ${w.status === EscrowStatus.Disputed ? "the poster may claim a full refund" : "the worker may collect"} without a ruling`;
      console.log(
        [
          "",
          `task        ${w.taskHash}`,
          `status      ${statusName(w.t.status)} (${w.t.status})${w.by ? `, raised by ${w.by === w.t.worker ? "the worker" : w.by === w.t.poster ? "the poster" : w.by} ${w.by}` : ", escalated unjudged work"}`,
          `poster      ${w.t.poster}`,
          `worker      ${w.t.worker}`,
          `amount      ${await tokenAmount(escrow, w.t.token, w.t.amount)}`,
          `due         ${due}`,
          `rule        npx hardhat --network ${hre.network.name} escrow:resolve-dispute --task ${w.taskHash} --worker-wins <true|false>`,
        ].join("\n"),
      );
    }
  },
).addOptionalParam("fromBlock", "First block to look for disputes (default: the deployment's block)", undefined, types.int);

taskOperation("escrow:release-unjudged", "Worker collects escalated work 14 days after escalation", (e, h) => ({
  simulate: () => e.releaseUnjudgedWork.staticCall(h),
  submit: () => e.releaseUnjudgedWork(h),
}));

escrowTask<CommonArgs & { token?: string }>(
  "escrow:withdraw-credit",
  "Withdraws funds credited to the sender after a failed transfer, to the sender only (never elsewhere)",
  async (args, { hre, escrow, signer }) => {
    const { readDeployment } = await import("../deploy/deployments");
    const token = args.token ?? readDeployment(hre.network.name)?.token;
    if (!token) throw new UsageError("no token given (--token) or recorded for this network");
    const account = await signer.getAddress();
    const credit = await escrow.creditOf(token, account);
    const ok = await send(
      escrow,
      "escrow:withdraw-credit",
      () => escrow.withdrawCredit.staticCall(token),
      () => escrow.withdrawCredit(token),
    );
    if (ok) console.log(`withdrew ${credit} of ${token} credited to ${account}`);
  },
).addOptionalParam("token", "Token address (default: the settlement token)");

escrowTask<CommonArgs & { token?: string }>(
  "escrow:sweep-fees",
  "Treasury or admin sends the fees accrued since the last sweep to the treasury (escrow 4.0.0)",
  async (args, { hre, escrow }) => {
    const { readDeployment } = await import("../deploy/deployments");
    const token = args.token ?? readDeployment(hre.network.name)?.token;
    if (!token) throw new UsageError("no token given (--token) or recorded for this network");
    const fees = await escrow.accruedFees(token);
    const treasury = await escrow.treasury();
    const ok = await send(
      escrow,
      "escrow:sweep-fees",
      () => escrow.sweepFees.staticCall(token),
      () => escrow.sweepFees(token),
    );
    if (ok) console.log(`swept ${fees} of ${token} to the treasury ${treasury}`);
  },
).addOptionalParam("token", "Token address (default: the settlement token)");

escrowTask<CommonArgs & { bps: number }>("escrow:set-fee", "Admin sets the fee in basis points (at most 3000)", async (args, { escrow }) => {
  if (
    await send(
      escrow,
      "escrow:set-fee",
      () => escrow.setFeeBps.staticCall(args.bps),
      () => escrow.setFeeBps(args.bps),
    )
  ) {
    await printConfig(escrow);
  }
}).addParam("bps", "Fee in basis points", undefined, types.int);

escrowTask("escrow:pause", "Admin pauses the escrow (rulings still go through)", async (_args, { escrow }) => {
  if (
    await send(
      escrow,
      "escrow:pause",
      () => escrow.pause.staticCall(),
      () => escrow.pause(),
    )
  )
    await printConfig(escrow);
});

escrowTask("escrow:unpause", "Admin unpauses; live deadlines move by the paused time", async (_args, { escrow }) => {
  if (
    await send(
      escrow,
      "escrow:unpause",
      () => escrow.unpause.staticCall(),
      () => escrow.unpause(),
    )
  )
    await printConfig(escrow);
});

escrowTask<CommonArgs & { admin: string }>("escrow:propose-admin", "Admin proposes a new admin (step 1 of 2)", async (args, { escrow }) => {
  if (
    await send(
      escrow,
      "escrow:propose-admin",
      () => escrow.proposeAdmin.staticCall(args.admin),
      () => escrow.proposeAdmin(args.admin),
    )
  ) {
    await printConfig(escrow);
  }
}).addParam("admin", "Proposed admin address (zero withdraws the proposal)");

escrowTask("escrow:accept-admin", "Proposed admin accepts (step 2 of 2)", async (_args, { escrow }) => {
  if (
    await send(
      escrow,
      "escrow:accept-admin",
      () => escrow.acceptAdmin.staticCall(),
      () => escrow.acceptAdmin(),
    )
  )
    await printConfig(escrow);
});

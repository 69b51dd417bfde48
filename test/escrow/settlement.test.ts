/**
 * The settlement commands (scripts/settlement.ts) as an operator runs them: Hardhat tasks against a local node that
 * holds a deployment made by the deploy script.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { JsonRpcProvider, NonceManager, Wallet, ZeroAddress, formatUnits, id } from "ethers";
import { readDeployment, type EscrowDeployment } from "../../deploy/deployments";
import { freePort, startLocalChain, type LocalChain } from "../../scripts/lib/local-chain";
import { send } from "../../scripts/settlement";
import { MockUSDC__factory, TaskEscrow__factory } from "../../typechain-types";
import { AMOUNT, DURATION, Status } from "../fixtures/escrow";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");
const CLI = require.resolve("hardhat/internal/cli/cli");

interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

describe("TaskEscrow settlement commands", function () {
  this.timeout(180_000);
  let chain: LocalChain;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let deployment: EscrowDeployment;
  let provider: JsonRpcProvider;
  let poster: Wallet;
  /** Sends as the poster, counting nonces locally (the node automines faster than ethers refreshes them). */
  let posterSender: NonceManager;
  let counter = 0;

  /** Runs `npx hardhat --network localhost <args>` against the node; never throws on a non-zero exit. */
  async function hardhat(...args: string[]): Promise<CommandResult> {
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, "--network", "localhost", ...args], { env, cwd: ROOT });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
    }
  }

  /** Asked of the node each time (the provider caches block numbers). */
  const blockNumber = async () => Number(await provider.send("eth_blockNumber", []));

  async function fundedTask(): Promise<string> {
    const taskHash = id(`settlement command task ${counter++}`);
    const escrow = TaskEscrow__factory.connect(deployment.proxy, posterSender);
    await (await escrow.createTask(taskHash, deployment.token, AMOUNT, DURATION, ZeroAddress)).wait();
    return taskHash;
  }

  before(async function () {
    chain = await startLocalChain({ port: await freePort(), quiet: true });
    dir = mkdtempSync(path.join(tmpdir(), "market-settlement-"));
    env = { ...process.env, LOCAL_RPC_URL: chain.url, DEPLOYMENTS_DIR: dir, HARDHAT_NETWORK: "", PRIVATE_KEY: "" };
    await run(process.execPath, [CLI, "run", "--no-compile", "--network", "localhost", "deploy/deploy.ts"], {
      env,
      cwd: ROOT,
    });
    const recorded = readDeployment("localhost", dir);
    if (!recorded) throw new Error("the deploy script wrote no deployment record");
    deployment = recorded;
    provider = new JsonRpcProvider(chain.url);
    poster = new Wallet(chain.accounts[3]!, provider);
    posterSender = new NonceManager(poster);
    const usdc = MockUSDC__factory.connect(deployment.token, posterSender);
    await (await usdc.mint(poster.address, 100n * AMOUNT)).wait();
    await (await usdc.approve(deployment.proxy, 100n * AMOUNT)).wait();
  });

  after(function () {
    provider?.destroy();
    chain?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("prints the decoded custom error, sends nothing and exits non-zero when the call would revert", async function () {
    const taskHash = await fundedTask();
    const blockBefore = await blockNumber();
    // The default signer is the first account (the admin), not the poster.
    const result = await hardhat("escrow:cancel", "--task", taskHash);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.contain(`escrow:cancel would revert: NotPoster(${taskHash}, ${deployment.admin})`);
    expect(result.stdout).not.to.contain("transaction");
    expect(await blockNumber()).to.equal(blockBefore);
    const task = await TaskEscrow__factory.connect(deployment.proxy, provider).getTask(taskHash);
    expect(task.status).to.equal(BigInt(Status.Funded));
  });

  it("sends, then prints the transaction hash and the resulting state", async function () {
    const taskHash = await fundedTask();
    const result = await hardhat("escrow:cancel", "--task", taskHash, "--from", poster.address);
    expect(result.code, result.stderr).to.equal(0);
    const hash = /escrow:cancel: transaction (0x[0-9a-f]{64})/.exec(result.stdout)?.[1];
    expect(hash, result.stdout).to.be.a("string");
    expect((await provider.getTransactionReceipt(hash!))?.status).to.equal(1);
    expect(result.stdout).to.contain(`task        ${taskHash}`);
    expect(result.stdout).to.contain("status      Cancelled (9)");
    expect(result.stdout).to.contain("ending      CancelledWhileOpen");
    expect(result.stdout).to.match(new RegExp(`amount      ${formatUnits(AMOUNT, 6)} USDC \\(${AMOUNT} raw\\)`));
    expect(result.stdout).to.match(/deadline {4}\d{4}-\d\d-\d\dT/);
  });

  it("refuses a malformed task hash or address with one clear line, reading and sending nothing", async function () {
    const before = await blockNumber();
    for (const [args, message] of [
      [["escrow:cancel", "--task", "0x1234"], "--task must be a task hash (0x + 64 hex characters)"],
      [["escrow:status", "--task", "abc"], "--task must be a task hash"],
      [["escrow:status", "--escrow", "market.eth"], "--escrow must be an address (0x + 40 hex characters)"],
      [["escrow:cancel", "--task", id("x"), "--from", "0x1234"], "--from must be an address"],
      [
        ["escrow:withdraw-credit", "--token", "0xABCDEF0123456789abcdef0123456789ABCDEF01"],
        "--token 0xABCDEF0123456789abcdef0123456789ABCDEF01 has a bad checksum",
      ],
    ] as const) {
      const result = await hardhat(...args);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).to.equal(1);
      expect(result.stderr.trim().split("\n"), args.join(" ")).to.have.length(1);
      expect(result.stderr).to.contain(message).and.not.contain("resolveName").and.not.contain("TypeError");
    }
    expect(await blockNumber()).to.equal(before);
  });

  it("escrow:disputes lists the disputed and escalated tasks awaiting a ruling, most urgent first, and flags the overdue", async function () {
    // Commands before this one sent from the poster's wallet themselves.
    posterSender.reset();
    const worker = new NonceManager(new Wallet(chain.accounts[4]!, provider));
    const workerAddress = await worker.getAddress();
    const asPoster = TaskEscrow__factory.connect(deployment.proxy, posterSender);
    const asWorker = TaskEscrow__factory.connect(deployment.proxy, worker);
    const assigned = async () => {
      const taskHash = await fundedTask();
      await (await asPoster.assignWorker(taskHash, workerAddress)).wait();
      return taskHash;
    };
    // Disputed at once by the worker; delivered and escalated after the deadline; disputed and already ruled.
    const disputed = await assigned();
    await (await asWorker.raiseDispute(disputed)).wait();
    const escalated = await assigned();
    await (await asWorker.submitEvidence(escalated, id("result"))).wait();
    const ruled = await assigned();
    await (await asWorker.raiseDispute(ruled)).wait();
    const asAdmin = TaskEscrow__factory.connect(deployment.proxy, new NonceManager(new Wallet(chain.accounts[0]!, provider)));
    await (await asAdmin.resolveDispute(ruled, false)).wait();
    await provider.send("evm_increaseTime", [Number(DURATION) + 60]);
    await (await asPoster.claimTimeout(escalated)).wait();

    const listed = await hardhat("escrow:disputes");
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.match(/^2 tasks awaiting the admin's ruling on /);
    expect(listed.stdout).to.not.contain(ruled);
    const first = listed.stdout.indexOf(`task        ${disputed}`);
    const second = listed.stdout.indexOf(`task        ${escalated}`);
    expect(first, listed.stdout).to.be.greaterThan(0);
    expect(second, "the dispute is due before the later escalation").to.be.greaterThan(first);
    expect(listed.stdout).to.contain(`status      Disputed (5), raised by the worker ${workerAddress}`);
    expect(listed.stdout).to.contain("status      Escalated (6), escalated unjudged work");
    expect(listed.stdout).to.match(/due {9}rule by \d{4}-\d\d-\d\dT.* \(1[23]d \d+h left\)/);
    expect(listed.stdout).to.contain(`escrow:resolve-dispute --task ${disputed} --worker-wins <true|false>`);

    await provider.send("evm_increaseTime", [14 * 86_400]);
    await provider.send("evm_mine", []);
    const later = await hardhat("escrow:disputes");
    expect(later.stdout).to.contain("OVERDUE since");
    expect(later.stdout).to.contain("the poster may claim a full refund without a ruling");
  });

  it("decodes an admin refusal with its arguments", async function () {
    const result = await hardhat("escrow:set-fee", "--bps", "3001");
    expect(result.code).to.equal(1);
    expect(result.stderr).to.contain("escrow:set-fee would revert: FeeExceedsMax(3001, 3000)");
  });

  it("withdraw-credit withdraws only to the sender: no --to, and NothingToWithdraw for an empty credit", async function () {
    const elsewhere = await hardhat("escrow:withdraw-credit", "--to", poster.address);
    expect(elsewhere.code).to.equal(1);
    expect(elsewhere.stderr + elsewhere.stdout).to.contain("Unrecognized param --to");
    const empty = await hardhat("escrow:withdraw-credit", "--from", poster.address);
    expect(empty.code).to.equal(1);
    expect(empty.stderr).to.contain(`escrow:withdraw-credit would revert: NothingToWithdraw(${deployment.token}, ${poster.address})`);
  });

  it("sweep-fees sends the accrued fees to the treasury, from the treasury only", async function () {
    posterSender.reset();
    const verifier = new NonceManager(new Wallet(chain.accounts[1]!, provider));
    const worker = new NonceManager(new Wallet(chain.accounts[4]!, provider));
    const treasury = new Wallet(chain.accounts[2]!, provider).address;
    const taskHash = await fundedTask();
    await (await TaskEscrow__factory.connect(deployment.proxy, verifier).marketplaceAssign(taskHash, await worker.getAddress())).wait();
    await (await TaskEscrow__factory.connect(deployment.proxy, worker).submitEvidence(taskHash, id("result"))).wait();
    await (await TaskEscrow__factory.connect(deployment.proxy, verifier).completeVerification(taskHash, true, 90)).wait();
    const fee = AMOUNT / 10n;
    const usdc = MockUSDC__factory.connect(deployment.token, provider);
    const before = await usdc.balanceOf(treasury);

    const refused = await hardhat("escrow:sweep-fees", "--from", poster.address);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain(`escrow:sweep-fees would revert: NotFeeSweeper(${poster.address})`);
    const swept = await hardhat("escrow:sweep-fees", "--from", treasury);
    expect(swept.code, swept.stderr).to.equal(0);
    expect(swept.stdout).to.contain(`swept ${fee} of ${deployment.token} to the treasury ${treasury}`);
    expect(await usdc.balanceOf(treasury)).to.equal(before + fee);
    const again = await hardhat("escrow:sweep-fees", "--from", treasury);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain(`escrow:sweep-fees would revert: NoFeesAccrued(${deployment.token})`);
  });

  it("reports a transaction that fails after a clean simulation, with a non-zero exit", async function () {
    const escrow = TaskEscrow__factory.connect(deployment.proxy, provider);
    const taskHash = id("moved on between simulation and sending");
    const refusal = Object.assign(new Error("execution reverted"), {
      data: escrow.interface.encodeErrorResult("TaskNotFound", [taskHash]),
    });
    const printed: string[] = [];
    const consoleError = console.error;
    const exitCode = process.exitCode;
    console.error = (line: string) => printed.push(line);
    try {
      const sent = await send(
        escrow,
        "escrow:cancel",
        async () => undefined,
        async () => {
          throw refusal;
        },
      );
      expect(sent).to.equal(false);
      expect(process.exitCode).to.equal(1);
    } finally {
      console.error = consoleError;
      process.exitCode = exitCode;
    }
    expect(printed).to.deep.equal([`escrow:cancel was refused when sent: TaskNotFound(${taskHash})`]);
  });
});

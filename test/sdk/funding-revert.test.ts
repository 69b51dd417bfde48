/**
 * A funding whose gas was estimated before another wallet's transaction changed the escrow's state (bench/security.ts
 * on a loaded machine: 1 post in 13 came back unlisted, `TX_UNCONFIRMED`, its funding mined and reverted). The escrow's
 * USDC balance is a storage slot of the token: a transfer into an escrow holding nothing writes a zero slot (20,000
 * gas), into one holding something a non-zero one (2,900). A funding estimated while another poster's task was funded,
 * sent after that task was cancelled, needs 17,100 gas more than its estimate: the SDK signs with a margin over the
 * estimate. A funding that is mined and reverts anyway (a squatter funds its hash between the estimate and the
 * broadcast) is reported `TX_REVERTED` with the escrow's reason, its rows failed: nothing was paid.
 */
import { expect } from "chai";
import hre from "hardhat";
import { JsonRpcProvider, Wallet, ZeroAddress, type Eip1193Provider } from "ethers";
import { stackFixture, type Stack } from "../support/stack";
import { startRpcProxy, type RpcProxy } from "../support/rpc-proxy";
import { MarketClient } from "../../sdk/src/client";
import { escrowInterface, type ChainWallet } from "../../sdk/src/chain";
import { connectInjected } from "../../sdk/src/injected";
import { ApiError } from "../../sdk/src/errors";
import { privateKeyOf } from "../server/harness";
import { publicTaskHash } from "@market/core/crypto";
import { findRevertData } from "@market/core/revert";

const seededStack = stackFixture(async (s) => ({ posterKey: await s.apiKeyFor(s.poster), strangerKey: await s.apiKeyFor(s.stranger) }));

const AMOUNT = 1_000_000n;
const DAY = 86_400n;

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = "condition") {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("sdk: a funding mined after another wallet's transaction", function () {
  this.timeout(120_000);
  let s: Stack;
  let proxy: RpcProxy;
  let poster: MarketClient;
  beforeEach(async function () {
    const { stack, seeded } = await seededStack();
    s = stack;
    proxy = await startRpcProxy(s.rpcUrl, { maxLogBlocks: 1_000_000, logDelayMs: 0 });
    const options = await s.clientOptions(s.poster, seeded.posterKey);
    poster = new MarketClient({ ...options, executor: { ...options.executor, rpcUrls: { arc: proxy.url } } });
  });
  afterEach(async function () {
    await proxy.close();
    await s.close();
  });

  /** The stranger funds a task of its own straight on the escrow: the escrow then holds exactly its amount. */
  async function strangerFunds(taskHash: string) {
    await (await s.usdc.mint(s.stranger.address, AMOUNT)).wait();
    await (await s.usdc.connect(s.stranger).approve(s.escrowAddress, AMOUNT)).wait();
    await (await s.escrow.connect(s.stranger).createTask(taskHash, s.token, AMOUNT, DAY, ZeroAddress)).wait();
  }

  /** Runs `post` with the poster's funding held between its estimate and its broadcast while `meanwhile` is mined. */
  async function withFundingHeld<T>(post: () => Promise<T>, meanwhile: () => Promise<void>): Promise<T> {
    proxy.holdSendsTo(s.escrowAddress);
    const posting = post();
    posting.catch(() => undefined);
    await until(() => proxy.heldSends === 1, 30_000, "the poster's funding sent");
    await meanwhile();
    proxy.releaseSends();
    return posting;
  }

  it("a post estimated while the escrow held another task, funded after that task was cancelled, is posted", async function () {
    const other = publicTaskHash("The stranger's own task, cancelled meanwhile.");
    await strangerFunds(other);
    expect(await s.usdc.balanceOf(s.escrowAddress)).to.equal(AMOUNT);
    const row = await withFundingHeld(
      () => poster.postTask({ instructions: "Name three rivers of France.", amountRaw: AMOUNT, privacy: "public" }),
      async () => {
        await (await s.escrow.connect(s.stranger).cancelTask(other)).wait();
        expect(await s.usdc.balanceOf(s.escrowAddress)).to.equal(0n);
      },
    );
    expect(row.error, row.error?.message).to.equal(undefined);
    expect(row.status).to.equal("posted");
    expect(await s.usdc.balanceOf(s.escrowAddress)).to.equal(AMOUNT);
  });

  /** The funding of `taskHash` by the poster, straight through the wallet (the call the posting engine makes). */
  const funding = (wallet: ChainWallet, taskHash: string) => ({
    to: wallet.escrow,
    data: escrowInterface.encodeFunctionData("createTask", [taskHash, wallet.token, AMOUNT, DAY, ZeroAddress]),
  });

  /** The stranger's funding of the same hash lands first; the poster's is mined and reverts. What the wallet reports. */
  async function squattedSend(wallet: ChainWallet, taskHash: string): Promise<ApiError> {
    const balance = await s.usdc.balanceOf(s.poster.address);
    const refused = await withFundingHeld(
      () => wallet.send(null, funding(wallet, taskHash)).catch((e: unknown) => e as ApiError),
      () => strangerFunds(taskHash),
    );
    expect(refused).to.be.instanceOf(ApiError);
    expect(await s.usdc.balanceOf(s.poster.address)).to.equal(balance);
    return refused as ApiError;
  }

  /** The mined transaction the error names: reverted, from the poster. */
  async function expectMinedRevert(error: ApiError) {
    expect(error.body.txHash).to.match(/^0x[0-9a-f]{64}$/);
    const txHash = String(error.body.txHash);
    const receipt = await hre.ethers.provider.getTransactionReceipt(txHash);
    expect(receipt?.status).to.equal(0);
    expect(receipt?.from).to.equal(s.poster.address);
    expect(error.code).to.equal("TX_REVERTED");
    expect(error.body.reason).to.equal("TaskHashUsed");
    expect(error.message).to.contain(`Transaction ${txHash} was mined and the escrow reverted it: TaskHashUsed(`);
  }

  it("a funding mined and reverted is TX_REVERTED with the escrow's reason, not TX_UNCONFIRMED (local key)", async function () {
    const error = await squattedSend(await poster.wallet(), publicTaskHash("Squatted between estimate and broadcast."));
    await expectMinedRevert(error);
  });

  it("a post whose funding was mined and reverted fails (nothing paid), it is not left unlisted", async function () {
    let squatted: string | undefined;
    const result = await withFundingHeld(
      () =>
        poster.postTasks([{ instructions: "Name three lakes of Italy.", amountRaw: AMOUNT, privacy: "public" }], {
          onFunding: (event) => {
            squatted = event.rows[0]!.taskHash;
          },
        }),
      () => strangerFunds(squatted!),
    );
    const row = result.results[0]!;
    expect(row.status).to.equal("failed");
    expect(row.error?.code).to.equal("TASK_HASH_IN_USE");
    expect(result.unlisted).to.equal(0);
  });

  it("a browser wallet's funding mined and reverted is TX_REVERTED with its hash, never 'nothing was sent'", async function () {
    // An EIP-1193 wallet over the chain's RPC (as test/web/harness.ts injects into pages), signing with the poster's key.
    // A wallet whose node mines on receipt answers eth_sendTransaction with an error though the transaction was mined.
    const rpc = new JsonRpcProvider(proxy.url, undefined, { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
    const signer = new Wallet(privateKeyOf(s.poster), rpc);
    const ethereum: Eip1193Provider = {
      async request({ method, params = [] }) {
        const args = params as unknown[];
        try {
          if (method === "eth_requestAccounts" || method === "eth_accounts") return [signer.address];
          if (method !== "eth_sendTransaction") return await rpc.send(method, args);
          const [tx] = args as [{ to: string; data: string; gas: string; nonce?: string }];
          const nonce = tx.nonce === undefined ? {} : { nonce: Number(tx.nonce) };
          return (await signer.sendTransaction({ to: tx.to, data: tx.data, gasLimit: BigInt(tx.gas), ...nonce })).hash;
        } catch (error) {
          // As a wallet answers a node's refusal: a JSON-RPC error with the revert data, when there is any.
          const data = findRevertData(error);
          throw Object.assign(new Error((error as Error).message), { code: data ? 3 : -32603, ...(data ? { data } : {}) });
        }
      },
    };
    try {
      const wallet = await connectInjected(await poster.settlement(), { provider: ethereum }, { arc: s.escrowAddress });
      const error = await squattedSend(wallet, publicTaskHash("Squatted under a browser wallet."));
      await expectMinedRevert(error);
    } finally {
      rpc.destroy();
    }
  });
});

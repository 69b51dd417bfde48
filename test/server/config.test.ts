/**
 * The server's configuration from the environment: defaults, whole-number settings, TRUST_PROXY, the postable chains
 * and the registries beside an escrow.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Wallet } from "ethers";
import { creditRuleFromEnv, DEFAULT_ABUSE, DEFAULT_OFFER_WINDOW_MS, DEFAULT_RATE_LIMIT, loadConfig } from "../../server/config";
import { DEFAULT_CREDIT_RULE } from "@market/core/reputation";
import { writeDeployment, type EscrowDeployment } from "../../deploy/deployments";

describe("server: configuration", function () {
  it("defaults to loopback, SQLite, no chains, no proxy trusted", function () {
    const config = loadConfig({ MARKET_DATA_DIR: "/tmp/market-config-test" });
    expect(config.host).to.equal("127.0.0.1");
    expect(config.port).to.equal(3000);
    expect(config.publicUrl).to.equal("http://127.0.0.1:3000");
    expect(config.databaseUrl).to.equal(undefined);
    expect(config.sqlitePath).to.equal("/tmp/market-config-test/market.sqlite");
    expect(config.chains).to.deep.equal([]);
    expect(config.rateLimit).to.deep.equal(DEFAULT_RATE_LIMIT);
    expect(config.offerWindowMs).to.equal(DEFAULT_OFFER_WINDOW_MS);
    expect(config.trustProxy).to.equal(false);
    expect(config.verifierKey).to.equal(undefined);
    expect(config.identity).to.deep.equal({ chain: "0g", retryMs: 30_000, maxRetryMs: 3_600_000 });
    expect(config.abuse).to.deep.equal(DEFAULT_ABUSE);
    expect(config.reputation).to.deep.equal(DEFAULT_CREDIT_RULE);
    expect(config.blobStore).to.equal("files");
    expect(config.leaseRetryMs).to.equal(1_000);
  });

  it("reads the upload quota and collection, and the reputation credit rule (docs/security.md)", function () {
    const config = loadConfig({
      UPLOAD_QUOTA_BYTES: "2048",
      UPLOAD_BYTES_PER_MINUTE: "1024",
      BLOB_GC_GRACE_MS: "60000",
      BLOB_GC_INTERVAL_MS: "0",
      REPUTATION_MIN_REWARD_RAW: "250000",
      REPUTATION_CREDITS_PER_PAIR: "3",
      REPUTATION_PAIR_PERIOD_SECONDS: "86400",
    });
    expect(config.abuse.uploads).to.deep.equal({ quotaBytes: 2048, bytesPerMinute: 1024, graceMs: 60_000, gcIntervalMs: 0 });
    expect(config.reputation).to.deep.equal({ minRewardRaw: 250_000n, perPair: 3, periodSeconds: 86_400 });
    expect(creditRuleFromEnv({ REPUTATION_MIN_REWARD_RAW: "1" }).minRewardRaw).to.equal(1n);
    expect(() => loadConfig({ UPLOAD_QUOTA_BYTES: "lots" })).to.throw(/UPLOAD_QUOTA_BYTES must be a whole number/);
    expect(() => loadConfig({ REPUTATION_MIN_REWARD_RAW: "0.5" })).to.throw(/REPUTATION_MIN_REWARD_RAW/);
  });

  it("reads where blobs go and how often leases are tried (docs/scaling.md)", function () {
    expect(loadConfig({ BLOB_STORE: "database" }).blobStore).to.equal("database");
    expect(loadConfig({ BLOB_STORE: " Files " }).blobStore).to.equal("files");
    expect(loadConfig({ LEASE_RETRY_MS: "250" }).leaseRetryMs).to.equal(250);
    // Never a busy loop against the database.
    expect(loadConfig({ LEASE_RETRY_MS: "0" }).leaseRetryMs).to.equal(50);
  });

  describe("chains", function () {
    const address = () => Wallet.createRandom().address;
    const chain = (name: string) => ({
      [`CHAIN_${name}_RPC_URL`]: "http://127.0.0.1:1",
      [`CHAIN_${name}_ESCROW`]: address(),
      [`CHAIN_${name}_TOKEN`]: address(),
      [`CHAIN_${name}_CHAIN_ID`]: "31337",
    });
    const postable = (env: Record<string, string>) =>
      Object.fromEntries(loadConfig({ ...chain("ARC"), ...chain("0G"), ...chain("BASE"), ...env }).chains.map((c) => [c.name, c.postable]));

    it("posts on arc only unless POSTABLE_CHAINS lists others", function () {
      expect(postable({})).to.deep.equal({ arc: true, "0g": false, base: false });
      expect(postable({ POSTABLE_CHAINS: "0g" })).to.deep.equal({ arc: false, "0g": true, base: false });
      expect(postable({ POSTABLE_CHAINS: " arc, 0g " })).to.deep.equal({ arc: true, "0g": true, base: false });
      expect(() => postable({ POSTABLE_CHAINS: "arc,solana" })).to.throw(/POSTABLE_CHAINS must list chains among arc, 0g, base, got "solana"/);
      expect(() => loadConfig({ IDENTITY_CHAIN: "mainnet" })).to.throw(/IDENTITY_CHAIN/);
    });

    it("follows new heads over the node's WebSocket unless INDEXER_SUBSCRIBE=false, at CHAIN_<C>_WS_URL when set (issue 30)", function () {
      const arc = (env: Record<string, string>) => loadConfig({ ...chain("ARC"), ...env });
      expect(arc({}).indexerSubscribe).to.equal(true);
      expect(arc({ INDEXER_SUBSCRIBE: "false" }).indexerSubscribe).to.equal(false);
      expect(arc({}).chains[0]!.wsUrl).to.equal(undefined);
      expect(arc({ CHAIN_ARC_WS_URL: "wss://node.example/key" }).chains[0]!.wsUrl).to.equal("wss://node.example/key");
    });

    it("tunes V8's heap for catch-ups unless INDEXER_V8_TUNING=false (issue 30)", function () {
      expect(loadConfig({}).indexerV8Tuning).to.equal(true);
      expect(loadConfig({ INDEXER_V8_TUNING: "false" }).indexerV8Tuning).to.equal(false);
    });

    it("INDEXER_V8_FLAGS are set once per process (in a process of its own)", function () {
      // A child process: the flags are the process's, and this one (the suite's) keeps V8's defaults.
      const script = `
        const { applyIndexerV8Flags, indexerV8FlagsApplied, INDEXER_V8_FLAGS } = require(${JSON.stringify(path.resolve(__dirname, "../../server/indexer"))});
        const before = indexerV8FlagsApplied();
        applyIndexerV8Flags();
        applyIndexerV8Flags();
        console.log(JSON.stringify({ before, after: indexerV8FlagsApplied(), flags: INDEXER_V8_FLAGS }));`;
      const out = execFileSync(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], { encoding: "utf8" });
      expect(JSON.parse(out.trim().split("\n").at(-1)!)).to.deep.equal({
        before: false,
        after: true,
        flags: ["--heap-growing-percent=300", "--no-memory-reducer"],
      });
    });

    it("takes the registries from the deployment record, or from CHAIN_<C>_IDENTITY and CHAIN_<C>_REPUTATION", function () {
      const dir = mkdtempSync(path.join(tmpdir(), "market-config-"));
      try {
        const registry = (block: number) => ({
          proxy: address(),
          implementation: address(),
          contract: "X",
          version: "1.0.0",
          admin: address(),
          block,
          deployedAt: "",
        });
        const record: EscrowDeployment = {
          ...{ network: "zerog-test", chainId: 16601, proxy: address(), implementation: address(), contract: "TaskEscrow", version: "2.0.0" },
          ...{
            token: address(),
            mockToken: false,
            admin: address(),
            verifier: address(),
            treasury: address(),
            feeBps: 1000,
            block: 7,
            deployedAt: "",
          },
          identity: { ...registry(9), minters: [] },
          reputation: { ...registry(10), writers: [] },
        };
        writeDeployment(record, dir);
        const recorded = { CHAIN_0G_RPC_URL: "http://127.0.0.1:1", CHAIN_0G_DEPLOYMENT: "zerog-test", DEPLOYMENTS_DIR: dir };
        expect(loadConfig(recorded).chains[0]).to.deep.include({
          escrow: record.proxy,
          startBlock: 7,
          identity: { address: record.identity!.proxy, block: 9 },
          reputation: { address: record.reputation!.proxy, block: 10 },
        });
        const overridden = address();
        const config = loadConfig({
          ...recorded,
          CHAIN_0G_IDENTITY: overridden,
          CHAIN_0G_REPUTATION: record.reputation!.proxy.toLowerCase(),
        });
        // An address of its own is read from the chain's start block; the recorded one keeps its deployment block.
        expect(config.chains[0]).to.deep.include({
          identity: { address: overridden, block: 0 },
          reputation: { address: record.reputation!.proxy, block: 10 },
        });
        expect(loadConfig(chain("0G")).chains[0]).to.not.have.property("identity");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  it("reads TRUST_PROXY as true/false, a hop count, or addresses and CIDR ranges", function () {
    const trust = (TRUST_PROXY: string) => loadConfig({ TRUST_PROXY }).trustProxy;
    expect(trust("")).to.equal(false);
    expect(trust("false")).to.equal(false);
    expect(trust("true")).to.equal(true);
    expect(trust("2")).to.equal(2);
    expect(trust("10.0.0.1, 10.1.0.0/16,::1")).to.deep.equal(["10.0.0.1", "10.1.0.0/16", "::1"]);
  });

  it("refuses settings it cannot read, naming them", function () {
    expect(() => loadConfig({ TRUST_PROXY: "loopback; rm" })).to.throw(/TRUST_PROXY/);
    expect(() => loadConfig({ PORT: "-1" })).to.throw(/PORT must be a whole number/);
    expect(() => loadConfig({ RATE_LIMIT_PER_IP: "many" })).to.throw(/RATE_LIMIT_PER_IP/);
    expect(() => loadConfig({ BLOB_STORE: "s3" })).to.throw(/BLOB_STORE must be files or database/);
    expect(() => loadConfig({ LEASE_RETRY_MS: "soon" })).to.throw(/LEASE_RETRY_MS/);
    expect(() => loadConfig({ CHAIN_BASE_RPC_URL: "http://127.0.0.1:1", CHAIN_BASE_DEPLOYMENT: "nowhere" })).to.throw(/CHAIN_BASE_/);
  });
});

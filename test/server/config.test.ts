/**
 * The server's configuration from the environment: defaults, whole-number settings, and TRUST_PROXY.
 */
import { expect } from "chai";
import { DEFAULT_OFFER_WINDOW_MS, DEFAULT_RATE_LIMIT, loadConfig } from "../../server/config";

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
    expect(() => loadConfig({ CHAIN_BASE_RPC_URL: "http://127.0.0.1:1", CHAIN_BASE_DEPLOYMENT: "nowhere" })).to.throw(/CHAIN_BASE_/);
  });
});

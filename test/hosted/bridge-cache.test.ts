/**
 * Issue 23, "also decide": `GET /health/bridge` made an uncached chain read per public request. Each chain's
 * verifier() read is now reused for 30 s (BRIDGE_HEALTH_CACHE_MS): a change on chain shows only once that has passed.
 */
import { expect } from "chai";
import { startTestServer, type TestServer } from "../server/harness";
import { expectOk } from "../server/expect";
import { BRIDGE_HEALTH_CACHE_MS } from "../../server/hosted/health";

describe("/health/bridge reads the chain at most once per 30 s (issue 23)", function () {
  this.timeout(60_000);
  let s: TestServer;

  before(async function () {
    s = await startTestServer();
  });
  after(async function () {
    await s.close();
  });

  it("answers from its cache until it lapses", async function () {
    const bridge = async () => expectOk(await s.call<{ verifierMatches: Record<string, boolean | null> }>("GET", "/health/bridge")).verifierMatches;
    expect(await bridge()).to.deep.equal({ arc: true });
    const escrow = s.escrow.connect(s.admin);
    const verifier = await escrow.verifier();
    await (await escrow.setVerifier(s.stranger.address)).wait();
    try {
      expect(await bridge(), "cached").to.deep.equal({ arc: true });
      s.advanceClock(BRIDGE_HEALTH_CACHE_MS + 1);
      expect(await bridge(), "read again").to.deep.equal({ arc: false });
    } finally {
      await (await escrow.setVerifier(verifier)).wait();
    }
  });
});

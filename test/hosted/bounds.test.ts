/**
 * The runner's bounds against real servers on loopback: a hosted agent's model or HTTP tool never reaches a private
 * address, however its URL spells one.
 */
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { boundedFetch, FetchRefused, isPrivateAddress, privateUrlReason } from "../../server/hosted/runner/bounds";

describe("hosted agents: runner bounds", function () {
  let server: Server;
  let port: number;
  let hits: string[];

  beforeEach(async function () {
    hits = [];
    server = createServer((req, res) => {
      hits.push(req.url ?? "/");
      res.end("internal secret page");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async function () {
    await new Promise((resolve) => server.close(resolve));
  });

  it("refuses private IPv4 addresses written as IPv6 (IPv4-mapped, IPv4-compatible, NAT64, 6to4), by their text and at call time", async function () {
    // The same loopback server, spelled as IPv6: the kernel connects [::ffff:127.0.0.1] to 127.0.0.1.
    const mapped = `http://[::ffff:127.0.0.1]:${port}/internal`;
    const urls = [
      mapped,
      `http://[::ffff:7f00:1]:${port}/`,
      "http://[::ffff:169.254.169.254]/latest/meta-data",
      "http://[0:0:0:0:0:ffff:a00:1]/v1",
      "http://[::127.0.0.1]/v1",
      "http://[64:ff9b::10.0.0.1]/v1",
      "http://[2002:c0a8:101::1]/v1",
      "http://[fe90::1]/v1",
      "http://[fec0::1]/v1",
    ];
    for (const url of urls) expect(privateUrlReason(url), url).to.equal("points at a private or loopback address");
    for (const address of ["::ffff:7f00:1", "::ffff:10.1.2.3", "::ffff:192.168.0.1", "64:ff9b::a9fe:a9fe", "2002:0a00:0001::", "febf::1"])
      expect(isPrivateAddress(address), address).to.equal(true);
    // Public addresses stay reachable, however written.
    for (const address of ["::ffff:8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:0808:0808::", "8.8.8.8"])
      expect(isPrivateAddress(address), address).to.equal(false);

    const fetchBounded = boundedFetch({ maxBytes: 1024, allowPrivateNetworks: false });
    let refused: unknown;
    try {
      await fetchBounded(mapped);
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(FetchRefused);
    expect(hits).to.deep.equal([]);
    // Allowed private networks (a local model server), the same URL goes through.
    const allowed = await boundedFetch({ maxBytes: 1024, allowPrivateNetworks: true })(mapped);
    expect(await allowed.text()).to.equal("internal secret page");
  });
});

/** The server's clock (server/chains/clock.ts): chain time where a chain is ahead of the wall clock, never backwards. */
import { expect } from "chai";
import hre from "hardhat";
import { time } from "@nomicfoundation/hardhat-network-helpers";
import { createChainClock } from "../../server/chains/clock";

describe("chain clock", () => {
  it("follows a chain moved ahead with evm_increaseTime, carried by the wall time since", async () => {
    let wall = (await time.latest()) * 1000;
    const clock = createChainClock([{ provider: hre.ethers.provider }], { intervalMs: 1_000, wall: () => wall });
    await clock.refresh();
    expect(clock.now()).to.be.at.least(wall);

    await time.increase(3 * 86_400);
    expect(clock.now()).to.be.lessThan((await time.latest()) * 1000); // not read yet
    await clock.refresh();
    const chainMs = (await time.latest()) * 1000;
    expect(clock.now()).to.be.within(chainMs, chainMs + 5_000);
    wall += 60_000;
    expect(clock.now()).to.be.within(chainMs + 60_000, chainMs + 65_000);
  });

  it("is the wall clock when the chain is behind it, and never goes backwards", async () => {
    let wall = (await time.latest()) * 1000 + 10 * 86_400_000;
    const clock = createChainClock([{ provider: hre.ethers.provider }], { intervalMs: 1_000, wall: () => wall });
    await clock.refresh();
    expect(clock.now()).to.equal(wall);
    wall -= 1_000;
    expect(clock.now()).to.equal(wall + 1_000);
  });

  it("skips a chain that does not answer", async () => {
    const down = { getBlock: () => Promise.reject(new Error("connection refused")) } as unknown as typeof hre.ethers.provider;
    const clock = createChainClock([{ provider: down }], { intervalMs: 1_000, wall: () => 5_000 });
    await clock.refresh();
    expect(clock.now()).to.equal(5_000);
  });
});

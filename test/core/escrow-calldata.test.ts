/**
 * The escrow's funding calls encoded without the ABI coder (core/escrow/calldata.ts, issue 30): the same bytes as
 * ethers' encodeFunctionData for createTask and createTasks, whatever the tasks, and values the coder refuses (out of
 * range, a wrong checksum) refused by it as before.
 */
import { expect } from "chai";
import fc from "fast-check";
import { getAddress } from "ethers";
import { TaskEscrow__factory } from "../../typechain-types";
import { fundingCalldata, type FundingParams } from "@market/core/escrow";

const escrow = TaskEscrow__factory.createInterface();
const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => `0x${Buffer.from(b).toString("hex")}`);
/** An address as the coder takes it: checksummed, lowercase or uppercase. */
const address = fc
  .tuple(hex(20), fc.constantFrom("checksummed", "lower", "upper"))
  .map(([a, style]) => (style === "lower" ? a : style === "upper" ? `0x${a.slice(2).toUpperCase()}` : getAddress(a)));
const task: fc.Arbitrary<FundingParams> = fc.record({
  taskHash: hex(32),
  token: address,
  amount: fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
  duration: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
  verifier: address,
});

function flipOneLetter(a: string): string {
  const at = [...a].findIndex((c, i) => i > 1 && /[a-fA-F]/.test(c));
  const c = a[at]!;
  return a.slice(0, at) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + a.slice(at + 1);
}

function byCoder(tasks: FundingParams[]): string {
  const single = tasks.length === 1 ? tasks[0]! : undefined;
  return single
    ? escrow.encodeFunctionData("createTask", [single.taskHash, single.token, single.amount, single.duration, single.verifier])
    : escrow.encodeFunctionData("createTasks", [tasks]);
}

describe("core/escrow: funding calldata", function () {
  it("is the ABI coder's createTask for one task and createTasks for several (property)", function () {
    fc.assert(
      fc.property(fc.array(task, { minLength: 0, maxLength: 25 }), (tasks) => {
        expect(fundingCalldata(tasks)).to.equal(byCoder(tasks));
      }),
      { numRuns: 300 },
    );
  });

  it("hands values the coder refuses (out of range, a wrong checksum) to it, which refuses them", function () {
    const ok: FundingParams = {
      taskHash: `0x${"ab".repeat(32)}`,
      token: `0x${"11".repeat(20)}`,
      amount: 1n,
      duration: 3600n,
      verifier: `0x${"00".repeat(20)}`,
    };
    for (const bad of [
      { ...ok, amount: -1n },
      { ...ok, amount: 1n << 256n },
      { ...ok, duration: 1n << 64n },
      { ...ok, taskHash: "0x1234" },
      { ...ok, token: "not an address" },
      // A wrong checksum (EIP-55): the right one with one letter's case flipped.
      { ...ok, token: flipOneLetter(getAddress(`0x${"ab".repeat(20)}`)) },
    ]) {
      expect(() => fundingCalldata([bad])).to.throw();
      expect(() => fundingCalldata([ok, bad])).to.throw();
    }
  });
});

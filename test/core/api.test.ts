import { expect } from "chai";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { asAddress, asRawAmount, asTaskHash, Assigned, isAddress, isRawAmount, isTaskHash, TaskView, UnsignedTx } from "@market/core/api";
import { TASK_STATUSES } from "@market/core/status";
import { ensureCliBuilt } from "../support/cli";

describe("core/api", function () {
  describe("branded strings", function () {
    const hash = `0x${"Ab".repeat(32)}`;

    it("a task hash is 0x + 64 hex digits, lowercased by its constructor", function () {
      expect(asTaskHash(hash)).to.equal(hash.toLowerCase());
      expect(isTaskHash(hash)).to.equal(false, "the API's form is lowercase");
      expect(isTaskHash(hash.toLowerCase())).to.equal(true);
      for (const bad of ["", "0x", `0x${"a".repeat(63)}`, `0x${"g".repeat(64)}`, "123"]) {
        expect(() => asTaskHash(bad), bad).to.throw(TypeError);
        expect(isTaskHash(bad)).to.equal(false);
      }
    });

    it("an address is 0x + 40 hex digits, its case kept", function () {
      const address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
      expect(asAddress(address)).to.equal(address);
      expect(isAddress(address.toLowerCase())).to.equal(true);
      for (const bad of ["0x", `0x${"1".repeat(41)}`, "70997970C51812dc3A010C7d01b50e0d17dc79C8", 42]) {
        expect(isAddress(bad)).to.equal(false);
        if (typeof bad === "string") expect(() => asAddress(bad)).to.throw(TypeError);
      }
    });

    it("a raw amount is decimal digits, from a bigint or a string", function () {
      expect(asRawAmount(5_000_003n)).to.equal("5000003");
      expect(asRawAmount("0")).to.equal("0");
      for (const bad of ["-1", "1.5", "1e6", "", "0x10"]) {
        expect(isRawAmount(bad)).to.equal(false);
        expect(() => asRawAmount(bad)).to.throw(TypeError);
      }
      expect(() => asRawAmount(-1n)).to.throw(TypeError);
    });
  });

  describe("schemas", function () {
    it("a task's status is one of the API's statuses (core/status), in the schema too", function () {
      expect(TaskView.properties.state.properties.status.enum).to.deep.equal([...TASK_STATUSES]);
    });

    it("the brands keep the JSON schema of the strings they type", function () {
      expect(TaskView.properties.meta.properties.taskHash).to.include({ type: "string", pattern: "^0x[0-9a-fA-F]{64}$" });
      expect(UnsignedTx.properties.to).to.include({ type: "string", pattern: "^0x[0-9a-fA-F]{40}$", format: "evm-address" });
      expect(JSON.parse(JSON.stringify(Assigned.properties.taskHash))).to.deep.equal({ type: "string" });
    });
  });

  it("the SDK loads no TypeBox at run time: it imports the API's types only", function () {
    this.timeout(120_000);
    ensureCliBuilt();
    const root = path.resolve(__dirname, "../..");
    const loaded = execFileSync(
      process.execPath,
      [
        "-e",
        "require('./sdk/dist/sdk/src/index.js'); console.log(JSON.stringify(Object.keys(require.cache).filter((m) => /typebox|core[\\\\/]api/.test(m))))",
      ],
      { cwd: root, encoding: "utf8" },
    );
    expect(JSON.parse(loaded)).to.deep.equal([]);
  });
});

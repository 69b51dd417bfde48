import { expect } from "chai";
import {
  ALIAS_REASONS,
  answeredCode,
  clearName,
  ERROR_CODE_ALIASES,
  ERROR_CODES,
  isErrorCode,
  MarketError,
  type ErrorCodeAlias,
} from "@market/core/errors";

describe("core/errors: clear names", function () {
  const aliases = Object.keys(ERROR_CODE_ALIASES) as ErrorCodeAlias[];

  it("an error raised by its clear name answers the code it always answered, with its status and message", function () {
    const error = new MarketError("NOT_WORKER");
    expect(error.code).to.equal("NOT_EXECUTOR");
    expect(error.status).to.equal(403);
    expect(error.message).to.equal(ERROR_CODES.NOT_EXECUTOR.description);
    expect(new MarketError("FUNDING_WALLET_MISMATCH", "funded by another wallet").code).to.equal("NOT_TASK_AGENT");
  });

  it("keeps the spec's code NOT_TASK_AGENT as the answered code", function () {
    expect(answeredCode("FUNDING_WALLET_MISMATCH")).to.equal("NOT_TASK_AGENT");
    expect(clearName("NOT_TASK_AGENT")).to.equal("FUNDING_WALLET_MISMATCH");
  });

  it("every clear name stands for one answered code, is no code itself, and says why", function () {
    for (const alias of aliases) {
      expect(isErrorCode(alias), alias).to.equal(false);
      expect(isErrorCode(ERROR_CODE_ALIASES[alias]), alias).to.equal(true);
      expect(ALIAS_REASONS[alias], alias).to.be.a("string").and.not.equal("");
      expect(clearName(ERROR_CODE_ALIASES[alias])).to.equal(alias);
    }
    expect(new Set(Object.values(ERROR_CODE_ALIASES)).size).to.equal(aliases.length, "one clear name per code");
  });

  it("a code without a clear name answers as itself", function () {
    expect(answeredCode("NOT_OPEN")).to.equal("NOT_OPEN");
    expect(clearName("NOT_OPEN")).to.equal(undefined);
  });
});

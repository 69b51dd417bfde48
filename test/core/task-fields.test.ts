import { expect } from "chai";
import { checkRoutingSummary, checkZone, parseAgentAddress, parseDuration, parsePrivacy, TaskFieldIssue } from "@market/core/task-fields";
import { charCount } from "@market/core/text";

const ADDRESS = "0x52908400098527886E0F7030069857D2E4169EE7";

describe("core/task-fields", () => {
  const durations: [string | number, number | string][] = [
    [3_600, 3_600],
    ["3600", 3_600],
    ["7776000", 7_776_000],
    [86_400, 86_400],
    [3_599, TaskFieldIssue.DURATION_OUT_OF_RANGE],
    ["7776001", TaskFieldIssue.DURATION_OUT_OF_RANGE],
    [0, TaskFieldIssue.DURATION_OUT_OF_RANGE],
    [3_600.5, TaskFieldIssue.DURATION_NOT_INTEGER],
    ["3600.0", TaskFieldIssue.DURATION_NOT_INTEGER],
    ["-3600", TaskFieldIssue.DURATION_NOT_INTEGER],
    ["1h", TaskFieldIssue.DURATION_NOT_INTEGER],
    ["", TaskFieldIssue.DURATION_NOT_INTEGER],
    [NaN, TaskFieldIssue.DURATION_NOT_INTEGER],
    ["9".repeat(30), TaskFieldIssue.DURATION_NOT_INTEGER],
  ];
  for (const [input, expected] of durations) {
    it(`parseDuration(${JSON.stringify(input)}) -> ${expected}`, () => {
      const result = parseDuration(input);
      if (typeof expected === "number") expect(result).to.deep.equal({ ok: true, value: expected });
      else expect(result).to.include({ ok: false, code: expected });
    });
  }

  const addresses: [string, string][] = [
    [ADDRESS, ADDRESS],
    [ADDRESS.toLowerCase(), ADDRESS],
    [` ${ADDRESS} `, ADDRESS],
    [`0x${ADDRESS.slice(2).toUpperCase()}`, ADDRESS],
  ];
  for (const [input, expected] of addresses) {
    it(`parseAgentAddress accepts ${JSON.stringify(input)}`, () => {
      expect(parseAgentAddress(input)).to.deep.equal({ ok: true, value: expected });
    });
  }
  for (const input of [
    "0x52908400098527886E0F7030069857D2E4169Ee7", // bad checksum
    ADDRESS.slice(2),
    `${ADDRESS}00`,
    "0x0000000000000000000000000000000000000000",
    "vitalik.eth",
    "",
  ]) {
    it(`parseAgentAddress refuses ${JSON.stringify(input)}`, () => {
      expect(parseAgentAddress(input)).to.include({ ok: false, code: TaskFieldIssue.INVALID_ADDRESS });
    });
  }

  it("privacy is public or private in any case", () => {
    expect(parsePrivacy(" Public ")).to.deep.equal({ ok: true, value: "public" });
    expect(parsePrivacy("PRIVATE")).to.deep.equal({ ok: true, value: "private" });
    expect(parsePrivacy("secret")).to.include({ ok: false, code: TaskFieldIssue.INVALID_PRIVACY });
    expect(parsePrivacy("")).to.include({ ok: false, code: TaskFieldIssue.INVALID_PRIVACY });
  });

  it("zone is up to 128 characters, counted as code points", () => {
    expect(checkZone("z".repeat(128)).ok).to.equal(true);
    expect(checkZone("🌍".repeat(128)).ok).to.equal(true);
    expect(checkZone("z".repeat(129))).to.include({ ok: false, code: TaskFieldIssue.ZONE_TOO_LONG });
  });

  it("routing summary is up to 500 characters", () => {
    expect(checkRoutingSummary("s".repeat(500)).ok).to.equal(true);
    expect(checkRoutingSummary("s".repeat(501))).to.include({ ok: false, code: TaskFieldIssue.ROUTING_SUMMARY_TOO_LONG });
  });

  it("charCount counts code points", () => {
    expect(charCount("")).to.equal(0);
    expect(charCount("héllo")).to.equal(5);
    expect(charCount("🚀🚀")).to.equal(2);
  });
});

import { expect } from "chai";
import { AmountIssue, formatDecimalAmount, formatUsdc, parseRawAmount, parseUsdcDecimal } from "@market/core/money";

const MAX = (1n << 256n) - 1n;

describe("core/money", () => {
  describe("parseRawAmount", () => {
    const good: [string, bigint][] = [
      ["1", 1n],
      ["2500000", 2_500_000n],
      ["007", 7n],
      [MAX.toString(), MAX],
      [`000${MAX}`, MAX],
    ];
    for (const [text, value] of good) {
      it(`accepts ${text.length > 20 ? `${text.slice(0, 20)}...` : text}`, () => {
        expect(parseRawAmount(text)).to.deep.equal({ ok: true, value });
      });
    }

    const bad: [string, string][] = [
      ["", AmountIssue.NOT_WHOLE_NUMBER],
      ["0", AmountIssue.NOT_POSITIVE],
      ["000", AmountIssue.NOT_POSITIVE],
      ["-1", AmountIssue.NOT_WHOLE_NUMBER],
      ["+1", AmountIssue.NOT_WHOLE_NUMBER],
      ["1.0", AmountIssue.NOT_WHOLE_NUMBER],
      ["1e6", AmountIssue.NOT_WHOLE_NUMBER],
      [" 1", AmountIssue.NOT_WHOLE_NUMBER],
      ["1 ", AmountIssue.NOT_WHOLE_NUMBER],
      ["0x10", AmountIssue.NOT_WHOLE_NUMBER],
      ["1_000", AmountIssue.NOT_WHOLE_NUMBER],
      ["١٢", AmountIssue.NOT_WHOLE_NUMBER],
      [(MAX + 1n).toString(), AmountIssue.TOO_LARGE],
      ["9".repeat(100_000), AmountIssue.TOO_LARGE],
    ];
    for (const [text, code] of bad) {
      it(`refuses ${JSON.stringify(text.slice(0, 20))} with ${code}`, () => {
        const result = parseRawAmount(text);
        expect(result.ok).to.equal(false);
        if (!result.ok) expect(result.code).to.equal(code);
      });
    }
  });

  describe("parseUsdcDecimal", () => {
    const good: [string, bigint][] = [
      ["2.5", 2_500_000n],
      ["2", 2_000_000n],
      ["0.000001", 1n],
      ["0.1", 100_000n],
      ["1.123456", 1_123_456n],
      ["02.50", 2_500_000n],
      ["1000000", 1_000_000_000_000n],
    ];
    for (const [text, value] of good) {
      it(`reads ${text} as ${value}`, () => {
        expect(parseUsdcDecimal(text)).to.deep.equal({ ok: true, value });
      });
    }

    const bad: [string, string][] = [
      ["1.1234567", AmountIssue.TOO_MANY_DECIMALS],
      ["2.5000000", AmountIssue.TOO_MANY_DECIMALS],
      ["0", AmountIssue.NOT_POSITIVE],
      ["0.0000001", AmountIssue.TOO_MANY_DECIMALS],
      ["0.000000", AmountIssue.NOT_POSITIVE],
      ["", AmountIssue.NOT_DECIMAL],
      [".5", AmountIssue.NOT_DECIMAL],
      ["5.", AmountIssue.NOT_DECIMAL],
      ["-2.5", AmountIssue.NOT_DECIMAL],
      ["2,5", AmountIssue.NOT_DECIMAL],
      ["$2.5", AmountIssue.NOT_DECIMAL],
      ["1e3", AmountIssue.NOT_DECIMAL],
      ["2.5 ", AmountIssue.NOT_DECIMAL],
      [`${MAX}`, AmountIssue.TOO_LARGE],
    ];
    for (const [text, code] of bad) {
      it(`refuses ${JSON.stringify(text.slice(0, 20))} with ${code}`, () => {
        const result = parseUsdcDecimal(text);
        expect(result.ok).to.equal(false);
        if (!result.ok) expect(result.code).to.equal(code);
      });
    }
  });

  describe("formatUsdc", () => {
    const table: [bigint, string][] = [
      [2_500_000n, "2.5"],
      [1n, "0.000001"],
      [0n, "0"],
      [1_000_000n, "1"],
      [123_456_789n, "123.456789"],
      [-1_500_000n, "-1.5"],
    ];
    for (const [raw, text] of table) {
      it(`${raw} -> ${text}`, () => {
        expect(formatUsdc(raw)).to.equal(text);
      });
    }

    it("round-trips with parseUsdcDecimal", () => {
      for (const raw of [1n, 10n, 999_999n, 1_000_001n, 2n ** 128n]) {
        expect(parseUsdcDecimal(formatUsdc(raw))).to.deep.equal({ ok: true, value: raw });
      }
    });

    it("formats other decimals", () => {
      expect(formatDecimalAmount(10n ** 18n + 5n, 18)).to.equal("1.000000000000000005");
    });
  });
});

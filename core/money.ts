/**
 * Amounts are bigint raw units (the token's smallest unit) everywhere in code and whole-number strings on the wire.
 * Decimal text such as "2.5" is only for people: read it with `parseUsdcDecimal`, show raw units with `formatUsdc`.
 */
import { MAX_UINT256, USDC_DECIMALS } from "./limits";
import { accepted, refused, type Checked } from "./issues";

export const AmountIssue = {
  /** Not a plain string of digits (signs, decimals, spaces, exponents and empty text are all refused). */
  NOT_WHOLE_NUMBER: "AMOUNT_NOT_WHOLE_NUMBER",
  /** Not plain decimal text (digits, optionally one `.` followed by digits). */
  NOT_DECIMAL: "AMOUNT_NOT_DECIMAL",
  TOO_MANY_DECIMALS: "AMOUNT_TOO_MANY_DECIMALS",
  NOT_POSITIVE: "AMOUNT_NOT_POSITIVE",
  TOO_LARGE: "AMOUNT_TOO_LARGE",
} as const;

const MAX_UINT256_DIGITS = MAX_UINT256.toString().length;

/** A raw amount from the wire: a whole number above 0 and at most 2^256-1, written with digits only. */
export function parseRawAmount(text: string): Checked<bigint> {
  if (!/^[0-9]+$/.test(text)) {
    return refused(AmountIssue.NOT_WHOLE_NUMBER, `amount must be a whole number of raw units, got ${quote(text)}`);
  }
  return checkRange(digitsToBigint(text));
}

/** USDC decimal text to raw units: "2.5" is 2500000n. More than 6 decimals is refused, never rounded. */
export function parseUsdcDecimal(text: string): Checked<bigint> {
  return parseDecimalAmount(text, USDC_DECIMALS, "USDC");
}

export function parseDecimalAmount(text: string, decimals: number, symbol = "token"): Checked<bigint> {
  const match = /^([0-9]+)(?:\.([0-9]+))?$/.exec(text);
  if (!match) {
    return refused(AmountIssue.NOT_DECIMAL, `reward must be a decimal number such as 2.5, got ${quote(text)}`);
  }
  const whole = match[1] ?? "";
  const fraction = match[2] ?? "";
  if (fraction.length > decimals) {
    return refused(AmountIssue.TOO_MANY_DECIMALS, `${symbol} has ${decimals} decimals; ${quote(text)} has ${fraction.length}`);
  }
  return checkRange(digitsToBigint(whole + fraction.padEnd(decimals, "0")));
}

/** Raw USDC units as decimal text for people, without trailing zeros: 2500000n is "2.5", 1n is "0.000001". */
export function formatUsdc(raw: bigint): string {
  return formatDecimalAmount(raw, USDC_DECIMALS);
}

export function formatDecimalAmount(raw: bigint, decimals: number): string {
  const sign = raw < 0n ? "-" : "";
  const digits = (raw < 0n ? -raw : raw).toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return fraction === "" ? `${sign}${whole}` : `${sign}${whole}.${fraction}`;
}

/** Converts without building a huge bigint from adversarial input: anything past 78 significant digits is too large. */
function digitsToBigint(digits: string): bigint | "too_large" {
  const significant = digits.replace(/^0+/, "");
  if (significant.length > MAX_UINT256_DIGITS) return "too_large";
  return significant === "" ? 0n : BigInt(significant);
}

function checkRange(value: bigint | "too_large"): Checked<bigint> {
  if (value === "too_large" || value > MAX_UINT256) {
    return refused(AmountIssue.TOO_LARGE, "amount must be at most 2^256-1 raw units");
  }
  if (value === 0n) return refused(AmountIssue.NOT_POSITIVE, "amount must be above 0");
  return accepted(value);
}

function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}...` : text);
}

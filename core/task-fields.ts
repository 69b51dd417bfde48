/**
 * Rules for single task fields that several surfaces accept (API task creation, bulk rows, SDK and MCP posts).
 * Each reads one untrusted value and returns it in canonical form or a refusal code.
 */
import { getAddress, isAddress, ZeroAddress } from "ethers";
import { accepted, refused, type Checked } from "./issues";
import { charCount } from "./text";
import { MAX_ROUTING_SUMMARY_CHARS, MAX_TASK_DURATION_SECONDS, MAX_ZONE_CHARS, MIN_TASK_DURATION_SECONDS } from "./limits";

export const PRIVACY_VALUES = ["public", "private"] as const;
export type Privacy = (typeof PRIVACY_VALUES)[number];

export const TaskFieldIssue = {
  DURATION_NOT_INTEGER: "DURATION_NOT_INTEGER",
  DURATION_OUT_OF_RANGE: "DURATION_OUT_OF_RANGE",
  ZONE_TOO_LONG: "ZONE_TOO_LONG",
  ROUTING_SUMMARY_TOO_LONG: "ROUTING_SUMMARY_TOO_LONG",
  INVALID_PRIVACY: "INVALID_PRIVACY",
  INVALID_ADDRESS: "INVALID_ADDRESS",
} as const;

/** Task duration in seconds: a whole number from 3,600 to 7,776,000, as digits or a JSON number. */
export function parseDuration(value: string | number): Checked<number> {
  const seconds = typeof value === "number" ? value : /^[0-9]{1,16}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(seconds)) {
    return refused(TaskFieldIssue.DURATION_NOT_INTEGER, `duration must be a whole number of seconds, got ${JSON.stringify(value)}`);
  }
  if (seconds < MIN_TASK_DURATION_SECONDS || seconds > MAX_TASK_DURATION_SECONDS) {
    return refused(
      TaskFieldIssue.DURATION_OUT_OF_RANGE,
      `duration must be ${MIN_TASK_DURATION_SECONDS} to ${MAX_TASK_DURATION_SECONDS} seconds, got ${seconds}`,
    );
  }
  return accepted(seconds);
}

export function checkZone(zone: string): Checked<string> {
  return charCount(zone) <= MAX_ZONE_CHARS
    ? accepted(zone)
    : refused(TaskFieldIssue.ZONE_TOO_LONG, `zone may be at most ${MAX_ZONE_CHARS} characters`);
}

export function checkRoutingSummary(summary: string): Checked<string> {
  return charCount(summary) <= MAX_ROUTING_SUMMARY_CHARS
    ? accepted(summary)
    : refused(TaskFieldIssue.ROUTING_SUMMARY_TOO_LONG, `routing summary may be at most ${MAX_ROUTING_SUMMARY_CHARS} characters`);
}

/** `public` or `private`, any case. */
export function parsePrivacy(value: string): Checked<Privacy> {
  const privacy = value.trim().toLowerCase();
  return privacy === "public" || privacy === "private"
    ? accepted(privacy)
    : refused(TaskFieldIssue.INVALID_PRIVACY, `privacy must be public or private, got ${JSON.stringify(value)}`);
}

/**
 * A 0x address of an agent or verifier, returned checksummed. All-lowercase and all-uppercase hex are accepted;
 * mixed case must carry a valid checksum. The zero address is refused.
 */
export function parseAgentAddress(value: string): Checked<string> {
  const text = value.trim();
  if (!/^0x[0-9a-fA-F]{40}$/.test(text) || !isAddress(text)) {
    return refused(TaskFieldIssue.INVALID_ADDRESS, `expected a 0x address of 40 hex characters with a valid checksum, got ${JSON.stringify(value)}`);
  }
  const address = getAddress(text);
  return address === ZeroAddress ? refused(TaskFieldIssue.INVALID_ADDRESS, "the zero address is not an agent") : accepted(address);
}

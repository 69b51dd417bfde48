import { expect } from "chai";
import { loadFixture } from "@nomicfoundation/hardhat-network-helpers";
import * as limits from "@market/core/limits";
import { deployEscrowFixture } from "../fixtures/escrow";
import type { TaskEscrow } from "../../typechain-types";

// Every limit the escrow enforces is read from the deployed contract's public constants, not restated here.
const ESCROW_LIMITS: [keyof typeof limits, string, (escrow: TaskEscrow) => Promise<bigint>][] = [
  ["MIN_TASK_DURATION_SECONDS", "MIN_DURATION()", (e) => e.MIN_DURATION()],
  ["MAX_TASK_DURATION_SECONDS", "MAX_DURATION()", (e) => e.MAX_DURATION()],
  ["MAX_SUBMISSIONS", "MAX_ROUNDS()", (e) => e.MAX_ROUNDS()],
  ["APPEAL_WINDOW_SECONDS", "APPEAL_WINDOW()", (e) => e.APPEAL_WINDOW()],
  ["RULING_WINDOW_SECONDS", "RULING_WINDOW()", (e) => e.RULING_WINDOW()],
  ["MAX_FEE_BPS", "MAX_FEE_BPS()", (e) => e.MAX_FEE_BPS()],
  ["BATCH_CHUNK_SIZE", "maxBatch()", (e) => e.maxBatch()],
];

describe("core/limits against the escrow's constants", () => {
  for (const [name, constant, read] of ESCROW_LIMITS) {
    it(`${name} is the escrow's ${constant}`, async () => {
      const { escrow } = await loadFixture(deployEscrowFixture);
      expect(BigInt(limits[name])).to.equal(await read(escrow));
    });
  }
});

// Pins every other limit to the number the spec states, so a changed constant is a deliberate, reviewed change.
describe("core/limits", () => {
  const day = 86_400;
  const table: [keyof typeof limits, number | bigint | string][] = [
    ["MINUTE_SECONDS", 60],
    ["HOUR_SECONDS", 3_600],
    ["DAY_SECONDS", 86_400],
    ["DEFAULT_BULK_DURATION_SECONDS", 86_400],
    ["BPS_DENOMINATOR", 10_000],
    ["MAX_UINT256", 115792089237316195423570985008687907853269984665640564039457584007913129639935n],
    ["USDC_DECIMALS", 6],
    ["BROWSE_PAGE_SIZE", 100],
    ["MAX_BULK_ROWS", 1_000],
    ["MAX_MCP_BULK_ROWS", 200],
    ["MAX_OUTPUT_CHARS", 500_000],
    // Abuse limits beyond the spec (docs/security.md).
    ["ASSIGNMENT_CAP_BASE", 3],
    ["ASSIGNMENT_CAP_COMPLETIONS_PER_SLOT", 5],
    ["ASSIGNMENT_CAP_MAX", 25],
    ["ACCEPTS_PER_MINUTE", 60],
    ["REPUTATION_PENALTY_NEVER_DELIVERED", 10],
    ["REPUTATION_PENALTY_PER_RELEASE", 2],
    ["MAX_UPLOAD_BYTES", 10_485_760],
    ["MAX_UPLOAD_BATCH", 20],
    ["MAX_WEB_BRIEF_CHARS", 20_000],
    ["PUBLIC_BRIEF_PREVIEW_CHARS", 4_000],
    ["DEFAULT_ZONE", "global"],
    ["MAX_ZONE_CHARS", 128],
    ["MAX_ROUTING_SUMMARY_CHARS", 500],
    ["REPUTATION_START", 50],
    ["REPUTATION_MIN", 0],
    ["REPUTATION_MAX", 100],
    ["REPUTATION_GAIN_PER_SETTLED_TASK", 1],
    ["REPUTATION_PENALTY_PER_FAILURE", 10],
    ["DECAYED_SCORE_PER_SETTLED_TASK", 10],
    ["DECAY_HALF_LIFE_SECONDS", 7 * day],
    ["BADGE_MIN_COMPLETIONS", 5],
    ["BADGE_FAILURE_PERCENT_BELOW", 20],
    ["RUNTIME_BROWSE_INTERVAL_MS", 15_000],
    ["NEEDS_WRAP_RETRY_INTERVAL_MS", 5_000],
    ["NEEDS_WRAP_FAST_RETRY_WINDOW_MS", 600_000],
    ["NEEDS_WRAP_MAX_BACKOFF_MS", day * 1_000],
    ["BELOW_MIN_REWARD_SKIP_MS", day * 1_000],
    ["MCP_QUOTE_TTL_MS", 600_000],
    ["MCP_RENT_WAIT_SECONDS_DEFAULT", 45],
    ["MCP_RENT_WAIT_SECONDS_MAX", 60],
    ["SERVICE_NAME_MIN_CHARS", 5],
    ["SERVICE_NAME_MAX_CHARS", 60],
    ["SERVICE_DESCRIPTION_MAX_CHARS", 2_000],
    ["RENTAL_DURATION_SECONDS", 3_600],
    // Abuse limits beyond the spec, their defaults (docs/security.md).
    ["REPUTATION_MIN_CREDITED_REWARD_RAW", 1_000_000n],
    ["REPUTATION_CREDITS_PER_PAIR", 5],
    ["REPUTATION_PAIR_PERIOD_SECONDS", 7 * day],
    ["UPLOAD_QUOTA_BYTES", 104_857_600],
    ["UPLOAD_BYTES_PER_MINUTE", 52_428_800],
    ["BLOB_GC_GRACE_MS", day * 1_000],
    ["BLOB_GC_INTERVAL_MS", 3_600_000],
  ];

  for (const [name, expected] of table) {
    it(`${name} = ${expected}`, () => {
      expect(limits[name]).to.equal(expected);
    });
  }

  it("names every exported limit in one of the tables above", () => {
    const named = [...table.map(([name]) => name), ...ESCROW_LIMITS.map(([name]) => name)];
    expect(Object.keys(limits).sort()).to.deep.equal(named.sort());
  });

  it("MAX_UINT256 is 2^256 - 1", () => {
    expect(limits.MAX_UINT256 + 1n).to.equal(2n ** 256n);
  });
});

import { expect } from "chai";
import * as limits from "../../core/limits";

// Pins every limit to the number the spec states, so a changed constant is a deliberate, reviewed change.
describe("core/limits", () => {
  const day = 86_400;
  const table: [keyof typeof limits, number | bigint | string][] = [
    ["MINUTE_SECONDS", 60],
    ["HOUR_SECONDS", 3_600],
    ["DAY_SECONDS", 86_400],
    ["MIN_TASK_DURATION_SECONDS", 3_600],
    ["MAX_TASK_DURATION_SECONDS", 7_776_000],
    ["DEFAULT_BULK_DURATION_SECONDS", 86_400],
    ["RENTAL_DURATION_SECONDS", 3_600],
    ["MAX_SUBMISSIONS", 3],
    ["APPEAL_WINDOW_SECONDS", 3 * day],
    ["DISPUTE_RULING_WINDOW_SECONDS", 14 * day],
    ["UNJUDGED_ESCALATION_SECONDS", 14 * day],
    ["CURRENT_FEE_BPS", 1_000],
    ["MAX_FEE_BPS", 3_000],
    ["BPS_DENOMINATOR", 10_000],
    ["MAX_UINT256", 115792089237316195423570985008687907853269984665640564039457584007913129639935n],
    ["USDC_DECIMALS", 6],
    ["BROWSE_PAGE_SIZE", 100],
    ["MAX_BULK_ROWS", 1_000],
    ["MAX_MCP_BULK_ROWS", 200],
    ["BATCH_CHUNK_SIZE", 20],
    ["MAX_UPLOAD_BYTES", 10_485_760],
    ["MAX_WEB_BRIEF_CHARS", 20_000],
    ["PUBLIC_BRIEF_PREVIEW_CHARS", 4_000],
    ["DEFAULT_ZONE", "global"],
    ["MAX_ZONE_CHARS", 128],
    ["MAX_ROUTING_SUMMARY_CHARS", 500],
    ["QUOTE_TTL_SECONDS", 600],
    ["DEFAULT_RENT_WAIT_SECONDS", 45],
    ["MAX_RENT_WAIT_SECONDS", 60],
    ["MIN_SERVICE_NAME_CHARS", 5],
    ["MAX_SERVICE_NAME_CHARS", 60],
    ["MAX_SERVICE_DESCRIPTION_CHARS", 2_000],
    ["MAX_TOOL_NAME_CHARS", 64],
    ["MAX_SANDBOX_TIMEOUT_SECONDS", 600],
    ["MAX_OPENAPI_IMPORT_BYTES", 10_485_760],
    ["MAX_SKILL_INSTRUCTIONS_BYTES", 16_384],
    ["MAX_SKILL_TOOLS", 20],
    ["MAX_SKILL_CAPABILITIES", 10],
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
  ];

  for (const [name, expected] of table) {
    it(`${name} = ${expected}`, () => {
      expect(limits[name]).to.equal(expected);
    });
  }

  it("names every exported limit in the table above", () => {
    expect(Object.keys(limits).sort()).to.deep.equal(table.map(([name]) => name).sort());
  });

  it("MAX_UINT256 is 2^256 - 1", () => {
    expect(limits.MAX_UINT256 + 1n).to.equal(2n ** 256n);
  });
});

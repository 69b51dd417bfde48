import { expect } from "chai";
import { BulkRowIssue, parseBulkFile, type BulkFileResult } from "@market/core/bulk";
import { checkRows } from "../../sdk/src/posting";
import { rentalInput } from "../../sdk/src/rentals";
import type { ApiError } from "../../sdk/src/errors";

const AGENT = "0x52908400098527886E0F7030069857D2E4169EE7";

function rowsOf(result: BulkFileResult) {
  if (!result.readable) expect.fail(`file refused: ${result.issue.code} ${result.issue.message}`);
  return result;
}

describe("core/bulk: a rental row (service_id)", () => {
  it("reads service_id with its target and the rental's rules, in CSV and JSON Lines", () => {
    const csv = rowsOf(
      parseBulkFile(`instructions,amount,duration,target,service_id,verification_min_length\nReview my lease,1500000,3600,${AGENT},12,20\n`, {
        format: "csv",
      }),
    );
    expect(csv.errors).to.deep.equal([]);
    expect(csv.rows[0]).to.deep.include({ target: AGENT, serviceId: 12, durationSeconds: 3600, criteria: { min_length: 20 } });
    const jsonl = rowsOf(
      parseBulkFile(`${JSON.stringify({ instructions: "Review my lease", amount: "1500000", target: AGENT, service_id: 12 })}\n`, {
        format: "jsonl",
      }),
    );
    expect(jsonl.rows[0]!.serviceId).to.equal(12);
    // No service_id: no serviceId on the row.
    const plain = rowsOf(parseBulkFile("instructions,amount\nReview my lease,1500000\n", { format: "csv" }));
    expect(plain.rows[0]).to.not.have.property("serviceId");
  });

  it("refuses service_id without a target, or that is not a service's id, naming the column", () => {
    const cases = [
      ["Review my lease,1,,12\n", "service_id"],
      [`Review my lease,1,${AGENT},0\n`, "service_id"],
      [`Review my lease,1,${AGENT},twelve\n`, "service_id"],
      [`Review my lease,1,${AGENT},2147483648\n`, "service_id"],
    ] as const;
    for (const [line, column] of cases) {
      const result = rowsOf(parseBulkFile(`instructions,amount,target,service_id\n${line}`, { format: "csv" }));
      expect(
        result.errors.map((e) => [e.column, e.code]),
        line,
      ).to.deep.equal([[column, BulkRowIssue.INVALID_VALUE]]);
    }
  });

  it("the SDK's rental row: the price, one hour, auto with min_length 20, pinned and linked", () => {
    const [checked] = checkRows([rentalInput({ id: 7, agent_address: AGENT as never, price_raw: "2500000" as never }, "Review my lease.")], {
      allowAgentMode: false,
    });
    expect(checked!.row).to.deep.include({ amount: 2_500_000n, durationSeconds: 3600, privacy: "private", target: AGENT, serviceId: 7 });
    expect(checked!.verificationMode).to.equal("auto");
    expect(checked!.verificationCriteria).to.deep.equal({ min_length: 20 });
    let refused: ApiError | undefined;
    try {
      checkRows([{ instructions: "Review my lease.", amountRaw: "1", serviceId: 7 }], { allowAgentMode: false });
    } catch (error) {
      refused = error as ApiError;
    }
    expect(refused?.code).to.equal("INVALID_ROWS");
    expect(refused?.body.errors?.[0]).to.deep.include({ column: "service_id", code: BulkRowIssue.INVALID_VALUE });
  });
});

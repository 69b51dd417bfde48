/**
 * core/bulk with the web app's rules (spec "Bulk run behaviour" 7, "Limits"; issue 28): unknown columns ignored and
 * listed once, identical rows refused (`DUPLICATE_ROW`), only the known capability tags, 20,000-character briefs. The
 * CLI's rules (the same files refused with `BAD_COLUMNS`, private rows posted twice) stay as they were.
 */
import { expect } from "chai";
import { BulkFileIssue, BulkRowIssue, parseBulkFile, type BulkFileOptions, type BulkFileResult } from "@market/core/bulk";
import { MAX_WEB_BRIEF_CHARS } from "@market/core/limits";

const web: BulkFileOptions = { format: "csv", web: true, knownCapabilitiesOnly: true, maxInstructionsChars: MAX_WEB_BRIEF_CHARS };

function read(result: BulkFileResult) {
  if (!result.readable) expect.fail(`file refused: ${result.issue.code} ${result.issue.message}`);
  return { lines: result.rows.map((r) => r.line), errors: result.errors.map(({ line, code }) => ({ line, code })), ignored: result.ignoredColumns };
}

describe("core/bulk: the web app's rules", () => {
  it("ignores unknown columns (listed once) where the CLI refuses the file", () => {
    const text = "instructions,reward,notes,owner\nSummarise the report,2,a,b\nTranslate the memo,3,c,d\n";
    expect(read(parseBulkFile(text, web))).to.deep.equal({ lines: [2, 3], errors: [], ignored: ["notes", "owner"] });
    const cli = parseBulkFile(text, { format: "csv" });
    expect(cli.readable ? undefined : cli.issue.code).to.equal(BulkFileIssue.BAD_COLUMNS);
    const jsonl = '{"instructions":"Summarise the report","reward":"2","notes":1}\n{"instructions":"Other","reward":"1","notes":2}\n';
    expect(read(parseBulkFile(jsonl, { ...web, format: "jsonl" }))).to.deep.equal({ lines: [1, 2], errors: [], ignored: ["notes"] });
  });

  it("refuses a row identical to an earlier one, private rows included; the CLI posts private ones twice", () => {
    const text = "instructions,reward,privacy\nSummarise the report,2,private\nSummarise the report,2,private\nSummarise the report,3,private\n";
    expect(read(parseBulkFile(text, web))).to.deep.equal({ lines: [2, 4], errors: [{ line: 3, code: BulkRowIssue.DUPLICATE_ROW }], ignored: [] });
    expect(read(parseBulkFile(text, { format: "csv" })).lines).to.deep.equal([2, 3, 4]);
  });

  it("takes only the known capability tags", () => {
    const text = "instructions,reward,capabilities\nSummarise the report,2,summarization\nFly the drone,2,drone-piloting\n";
    expect(read(parseBulkFile(text, web)).errors).to.deep.equal([{ line: 3, code: BulkRowIssue.INVALID_CAPABILITY }]);
    expect(read(parseBulkFile(text, { format: "csv" })).errors).to.deep.equal([]);
  });

  it("takes briefs up to 20,000 characters", () => {
    const at = "a".repeat(MAX_WEB_BRIEF_CHARS);
    const text = `instructions,reward\n${at},2\n${at}b,2\n`;
    expect(read(parseBulkFile(text, web)).errors).to.deep.equal([{ line: 3, code: BulkRowIssue.INSTRUCTIONS_TOO_LONG }]);
  });
});

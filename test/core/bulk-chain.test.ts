import { expect } from "chai";
import { BulkRowIssue, parseBulkFile, type BulkFileResult } from "@market/core/bulk";
import { contentHash } from "../../sdk/src/posting/journal";

function rowsOf(result: BulkFileResult) {
  if (!result.readable) expect.fail(`file refused: ${result.issue.code} ${result.issue.message}`);
  return result;
}

describe("core/bulk: the chain column", () => {
  it("reads a row's chain in CSV and JSON Lines (any case); an empty cell leaves it to the run", () => {
    const csv = rowsOf(parseBulkFile("instructions,reward,chain\nOne,1,0G\nTwo,1,\nThree,1, arc \n", { format: "csv" }));
    expect(csv.errors).to.deep.equal([]);
    expect(csv.rows.map((r) => r.chain)).to.deep.equal(["0g", undefined, "arc"]);
    const jsonl = rowsOf(
      parseBulkFile('{"instructions":"One","reward":"1","chain":"0g"}\n{"instructions":"Two","reward":"1","chain":null}\n', { format: "jsonl" }),
    );
    expect(jsonl.rows.map((r) => r.chain)).to.deep.equal(["0g", undefined]);
  });

  it("refuses a chain the marketplace does not know, and one that is not text, naming the cell", () => {
    const result = rowsOf(
      parseBulkFile('{"instructions":"One","reward":"1","chain":"solana"}\n{"instructions":"Two","reward":"1","chain":7}\n', { format: "jsonl" }),
    );
    expect(result.rows).to.deep.equal([]);
    expect(result.errors.map((e) => [e.line, e.column, e.code])).to.deep.equal([
      [1, "chain", BulkRowIssue.INVALID_VALUE],
      [2, "chain", BulkRowIssue.INVALID_VALUE],
    ]);
    expect(result.errors[0]!.message).to.equal('chain must be one of arc, 0g, base, got "solana"');
  });

  it("keys a row by its content alone: naming its chain leaves its journal key as it was (each chain has its own journal)", () => {
    const [plain] = rowsOf(parseBulkFile("instructions,reward\nOne,1\n", { format: "csv" })).rows;
    const [named] = rowsOf(parseBulkFile("instructions,reward,chain\nOne,1,arc\n", { format: "csv" })).rows;
    expect(contentHash(named!)).to.equal(contentHash(plain!));
  });
});

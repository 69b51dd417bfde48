import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";
import { errorDocs } from "../scripts/lib/error-docs";
import { parseBulkFile } from "@market/core/bulk";

const ERRORS_MD = path.resolve(__dirname, "..", "docs", "errors.md");

describe("docs", function () {
  it("docs/errors.md is the code table as it is (run `npm run docs` after changing core/errors.ts)", function () {
    expect(readFileSync(ERRORS_MD, "utf8")).to.equal(errorDocs());
  });

  it("docs/errors.md explains every code a bad bulk row is refused with (AMOUNT_NOT_DECIMAL, DURATION_OUT_OF_RANGE, INVALID_PRIVACY...)", function () {
    const text = [
      "instructions,reward,amount,duration,privacy,zone,target,verification,verification_min_length,capabilities",
      "A,2;5,,,,,,,,",
      "B,,1.5,,,,,,,",
      "C,1,,60,,,,,,",
      "D,1,,,secret,,,,,",
      `E,1,,,,${"z".repeat(200)},,,,`,
      "F,1,,,,,0x12,,,",
      "G,1,,,,,,oracle,,",
      "H,1,,,,,,,ten,",
      "I,0.0000001,,,,,,,,",
      "J,1,,,,,,,,1bad",
      ",1,,,,,,,,",
    ].join("\n");
    const parsed = parseBulkFile(text, { format: "csv" });
    expect(parsed.readable).to.equal(true);
    const codes = new Set(parsed.readable ? parsed.errors.map((e) => e.code) : []);
    expect([...codes]).to.include.members(["AMOUNT_NOT_DECIMAL", "DURATION_OUT_OF_RANGE", "INVALID_PRIVACY", "AMOUNT_NOT_WHOLE_NUMBER"]);
    const bulkSection = readFileSync(ERRORS_MD, "utf8").split("## Bulk row issues")[1]!;
    for (const code of codes) expect(bulkSection, code).to.match(new RegExp(`\\| \`${code}\` \\| \\S`));
  });
});

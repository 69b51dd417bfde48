import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";
import { errorDocs } from "../scripts/lib/error-docs";

describe("docs", function () {
  it("docs/errors.md is the code table as it is (run `npm run docs` after changing core/errors.ts)", function () {
    expect(readFileSync(path.resolve(__dirname, "..", "docs", "errors.md"), "utf8")).to.equal(errorDocs());
  });
});

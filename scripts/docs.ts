/** `npm run docs`: regenerates docs/errors.md from the code table. */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { errorDocs } from "./lib/error-docs";

const file = path.resolve(__dirname, "..", "docs", "errors.md");
writeFileSync(file, errorDocs());
console.log(`wrote ${file}`);

/**
 * `market tools import-openapi <file|url>` (issue 25): drafts HTTP tools from an OpenAPI 3.x JSON document through the
 * API (nothing stored, nothing run). Prints each draft with what to review; `--out` writes the drafts' tool definitions
 * to a JSON file to edit (make each `url` full) and confirm into a deploy, an agent update or a skill; `--json` prints
 * the API's answer.
 */
import { writeFileSync } from "node:fs";
import { MarketClient } from "../../sdk/src/client";
import { clientError } from "../../sdk/src/errors";
import type { OpenApiSource } from "../../sdk/src/skills";
import { clientOptions, type CliConfig } from "./config";
import type { Terminal } from "./terminal";

export interface ImportOpenApiFlags {
  out?: string;
}

export async function importOpenApiCommand(source: string, flags: ImportOpenApiFlags, config: CliConfig, terminal: Terminal): Promise<number> {
  const from: OpenApiSource = /^https?:\/\//i.test(source) ? { url: source } : { file: source };
  const answer = await new MarketClient(clientOptions(config, { signs: false })).importOpenApi(from);
  if (flags.out) {
    try {
      writeFileSync(
        flags.out,
        `${JSON.stringify(
          answer.drafts.map((d) => d.tool),
          null,
          2,
        )}\n`,
      );
    } catch (error) {
      throw clientError("VALIDATION_FAILED", `cannot write ${flags.out}: ${(error as Error).message}`);
    }
  }
  terminal.data(answer);
  for (const { tool, review } of answer.drafts) {
    const t = tool as { name: string; method: string; url: string };
    terminal.say(`${t.name}\t${t.method} ${t.url}`);
    for (const note of review) terminal.say(`  review: ${note}`);
  }
  terminal.say(
    `${answer.drafts.length} draft tool(s)${answer.skipped ? ` (${answer.skipped} operation(s) beyond the limit skipped)` : ""}` +
      `${answer.servers.length ? `; servers: ${answer.servers.join(", ")}` : ""}. Drafts hold only a path: make each url full, review, ` +
      `then confirm them into a deploy, an agent update or a skill${flags.out ? ` (written to ${flags.out})` : " (--out <file> writes them)"}.`,
  );
  return 0;
}

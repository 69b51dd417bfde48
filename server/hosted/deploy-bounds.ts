/**
 * Bounds of a deploy body beyond its schema (issue 23 item 2), each with its own code: checked first, before the
 * deploy window, the quota, the fee or any sealing, so a body past them costs the server next to nothing and nothing
 * of the account (no deploy counted, no fee used). The 1 MiB body limit alone allowed about 108,000 secrets.
 */
import { MarketError } from "@market/core/errors";
import type { DeployAgentBody } from "@market/core/api";

/** Tools per agent. */
export const MAX_TOOLS = 20;
/** `toolSecrets` entries per deploy. */
export const MAX_TOOL_SECRETS = 20;
/** Parameters (inputs) per tool. */
export const MAX_TOOL_PARAMETERS = 30;
/** `paramMapping` entries per HTTP tool. */
export const MAX_PARAM_MAPPINGS = 30;

const over = (
  code: "TOO_MANY_TOOLS" | "TOO_MANY_TOOL_SECRETS" | "TOO_MANY_TOOL_PARAMETERS" | "TOO_MANY_PARAM_MAPPINGS",
  field: string,
  limit: number,
  count: number,
) => new MarketError(code, `${field} has ${count} entries; at most ${limit} are allowed.`, { details: [{ field, message: `at most ${limit}` }] });

/**
 * Throws the bound's own code when the body's tools, secrets, parameters or mappings are more than allowed: a deploy's
 * body and an owner's update (PATCH, which has no `toolSecrets`) alike.
 */
export function checkDeployBounds(body: Pick<DeployAgentBody, "tools" | "toolSecrets">): void {
  const tools = body.tools ?? [];
  if (tools.length > MAX_TOOLS) throw over("TOO_MANY_TOOLS", "body.tools", MAX_TOOLS, tools.length);
  const secrets = Object.keys(body.toolSecrets ?? {}).length;
  if (secrets > MAX_TOOL_SECRETS) throw over("TOO_MANY_TOOL_SECRETS", "body.toolSecrets", MAX_TOOL_SECRETS, secrets);
  tools.forEach((tool, i) => {
    // Every tool type (issue 25's MCP types and issue 26's sandbox types included); an MCP server's tools are listed, not given.
    const parameters = "parameters" in tool ? Object.keys(tool.parameters?.properties ?? {}).length : 0;
    if (parameters > MAX_TOOL_PARAMETERS)
      throw over("TOO_MANY_TOOL_PARAMETERS", `body.tools.${i}.parameters.properties`, MAX_TOOL_PARAMETERS, parameters);
    const mappings = "paramMapping" in tool ? Object.keys(tool.paramMapping ?? {}).length : 0;
    if (mappings > MAX_PARAM_MAPPINGS) throw over("TOO_MANY_PARAM_MAPPINGS", `body.tools.${i}.paramMapping`, MAX_PARAM_MAPPINGS, mappings);
  });
}

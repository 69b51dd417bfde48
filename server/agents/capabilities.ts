import { checkCapabilities } from "../../core/capabilities";
import { MarketError } from "../../core/errors";

/** Tags from an API list: known tags only, each refusal named. */
export function capabilityTags(entries: readonly string[], field: string): string[] {
  const { tags, unknown } = checkCapabilities(entries);
  if (unknown.length > 0) {
    throw new MarketError("VALIDATION_FAILED", `${field} has unknown capability tags: ${unknown.join(", ")}`, {
      details: unknown.map((tag) => ({ field, message: `unknown capability tag ${JSON.stringify(tag)}` })),
    });
  }
  return tags;
}

/** `a,b,c` from a query string. */
export function capabilityQuery(text: string | undefined, field = "query.capabilities"): string[] {
  return text === undefined ? [] : capabilityTags(text.split(","), field);
}

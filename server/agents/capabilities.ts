import { CAPABILITY_TAG_RULE, checkCapabilities } from "@market/core/capabilities";
import { MarketError } from "@market/core/errors";

/** Tags from an API list: well-formed tags only (core/capabilities.ts), each refusal named. */
export function capabilityTags(entries: readonly string[], field: string): string[] {
  const { tags, invalid } = checkCapabilities(entries);
  if (invalid.length > 0) {
    throw new MarketError("VALIDATION_FAILED", `${field} has malformed capability tags (${CAPABILITY_TAG_RULE}): ${invalid.join(", ")}`, {
      details: invalid.map((tag) => ({ field, message: `malformed capability tag ${JSON.stringify(tag)}` })),
    });
  }
  return tags;
}

/** `a,b,c` from a query string. */
export function capabilityQuery(text: string | undefined, field = "query.capabilities"): string[] {
  return text === undefined ? [] : capabilityTags(text.split(","), field);
}

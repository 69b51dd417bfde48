/** The 20 capability tags an agent declares and a task requires (spec: "Capability tags"). */
export const CAPABILITY_TAGS = [
  "data_processing",
  "web_research",
  "code_execution",
  "content_generation",
  "api_integration",
  "text_analysis",
  "translation",
  "summarization",
  "image_analysis",
  "document_processing",
  "math_computation",
  "data_extraction",
  "report_generation",
  "code_review",
  "testing",
  "scheduling",
  "email_drafting",
  "social_media",
  "market_research",
  "competitive_analysis",
] as const;

export type CapabilityTag = (typeof CAPABILITY_TAGS)[number];

/** SDK constants: `AgentCap.WEB_RESEARCH === "web_research"`. */
export const AgentCap = Object.freeze(Object.fromEntries(CAPABILITY_TAGS.map((tag) => [tag.toUpperCase(), tag]))) as {
  readonly [T in CapabilityTag as Uppercase<T>]: T;
};

const knownTags: ReadonlySet<string> = new Set(CAPABILITY_TAGS);

export function isCapabilityTag(value: unknown): value is CapabilityTag {
  return typeof value === "string" && knownTags.has(value);
}

export interface CapabilityList {
  /** Known tags in first-seen order, without duplicates. */
  tags: CapabilityTag[];
  /** Entries that are not one of the 20 tags, as written. */
  unknown: string[];
}

/**
 * Reads a list of tags from text such as `web_research; summarization`. Entries are trimmed and compared without
 * case; empty entries (a trailing separator) are skipped. The CLI also separates on `,` (`allowComma`); elsewhere a
 * comma stays inside an entry, which then shows up as unknown.
 */
export function parseCapabilityList(text: string, options: { allowComma?: boolean } = {}): CapabilityList {
  const separator = options.allowComma ? /[;,]/ : /;/;
  return checkCapabilities(text.split(separator));
}

/** Checks tags given as an array (API bodies, JSON Lines), with the same trimming and case rule as the text form. */
export function checkCapabilities(entries: readonly string[]): CapabilityList {
  const tags: CapabilityTag[] = [];
  const unknown: string[] = [];
  for (const entry of entries) {
    const trimmed = entry.trim();
    if (trimmed === "") continue;
    const tag = trimmed.toLowerCase();
    if (!isCapabilityTag(tag)) unknown.push(trimmed);
    else if (!tags.includes(tag)) tags.push(tag);
  }
  return { tags, unknown };
}

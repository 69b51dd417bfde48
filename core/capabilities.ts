/**
 * The 20 known capability tags (spec: "Capability tags"): the only tags the web app offers, and the ones badges are
 * earned for. The API, the SDK and the CLI accept any well-formed tag (`CAPABILITY_TAG_PATTERN`).
 */
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

/** One of the 20 known tags. */
export function isCapabilityTag(value: unknown): value is CapabilityTag {
  return typeof value === "string" && knownTags.has(value);
}

/**
 * A well-formed capability tag (after trimming and lower-casing): a letter, then letters, digits, `_` or `-`, at most
 * 64 characters in all, such as `summarization` or `legal_review`.
 */
export const CAPABILITY_TAG_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;
export const CAPABILITY_TAG_RULE = "a letter, then letters, digits, _ or -, at most 64 characters";

export function isWellFormedTag(value: unknown): value is string {
  return typeof value === "string" && CAPABILITY_TAG_PATTERN.test(value);
}

export interface CapabilityList {
  /** Well-formed tags, lower-cased, in first-seen order, without duplicates. */
  tags: string[];
  /** Entries that are not well-formed tags, as written. */
  invalid: string[];
}

/**
 * Reads a list of tags from text such as `web_research; summarization`. Entries are trimmed and compared without
 * case; empty entries (a trailing separator) are skipped. The CLI also separates on `,` (`allowComma`); elsewhere a
 * comma stays inside an entry, which then shows up as invalid.
 */
export function parseCapabilityList(text: string, options: { allowComma?: boolean } = {}): CapabilityList {
  const separator = options.allowComma ? /[;,]/ : /;/;
  return checkCapabilities(text.split(separator));
}

/** Checks tags given as an array (API bodies, JSON Lines), with the same trimming and case rule as the text form. */
export function checkCapabilities(entries: readonly string[]): CapabilityList {
  const tags: string[] = [];
  const invalid: string[] = [];
  for (const entry of entries) {
    const trimmed = entry.trim();
    if (trimmed === "") continue;
    const tag = trimmed.toLowerCase();
    if (!isWellFormedTag(tag)) invalid.push(trimmed);
    else if (!tags.includes(tag)) tags.push(tag);
  }
  return { tags, invalid };
}

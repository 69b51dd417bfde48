/**
 * The real-content rules every automatically verified result must meet, whatever its criteria say: it is not
 * empty, not a refusal, not the brief handed back, and not a placeholder. Each returns a reason when it fails.
 *
 * They are deliberately narrow, to keep false alarms away from genuine work: a refusal counts only when refusal
 * sentences make up most of the output, and a placeholder only when the whole output is one.
 */

export type ContentRule = "empty" | "refusal" | "echo" | "placeholder";

export interface ContentFailure {
  rule: ContentRule;
  reason: string;
}

export function checkRealContent(output: string, brief?: string): ContentFailure | undefined {
  if (output.trim() === "") return { rule: "empty", reason: "output is empty" };
  if (isPlaceholder(output)) return { rule: "placeholder", reason: "output is only a placeholder, not a result" };
  if (brief !== undefined && isEcho(output, brief)) {
    return { rule: "echo", reason: "output repeats the brief instead of answering it" };
  }
  if (isRefusal(output)) return { rule: "refusal", reason: "output reads as a refusal to do the task" };
  return undefined;
}

// ---- refusals ----

/**
 * A sentence containing one of these declines the task. Written for text lower-cased with curly apostrophes made
 * straight. All of them are linear (no nested or adjacent overlapping repeats).
 */
const REFUSAL_PATTERNS: readonly RegExp[] = [
  // "I can't help with that", "I'm sorry, but I cannot assist": helping itself declined (not "can't help but notice")
  /\bi(?:'m| am)? (?:really |truly |simply )?(?:can ?not|can't|cant|won't|will not|unable to|not able to|not allowed to|not permitted to|not going to|won't be able to|will not be able to|(?:do not|don't) feel comfortable) (?:help|assist)(?!\w| but\b| feeling\b| thinking\b| wondering\b| noticing\b)/,
  // "I'm unable to complete this task", "I won't be able to write that", "I cannot fulfill your request": the task
  // declined, not a fact stated about some other thing ("I cannot process refunds after 30 days", "I can't
  // complete the migration without downtime")
  /\bi(?:'m| am)? (?:really |truly |simply )?(?:can ?not|can't|cant|won't|will not|unable to|not able to|not allowed to|not permitted to|not going to|won't be able to|will not be able to|(?:do not|don't) feel comfortable) (?:comply|fulfil|fulfill|complet|do|provid|creat|writ|generat|produc|answer|perform|engag|continu|process|carry out)\w*(?: with)?(?: (?:this|that|it|these|those)\b| (?:the|your|such a) (?:request|task|question|prompt|content|information)\b|[.!,;]|$)/,
  // "I'm sorry, but I won't.", "I'm afraid I cannot.", "Sorry, I can't."
  /\bi(?:'m| am)? (?:afraid i |really |simply )?(?:can ?not|can't|cant|won't|will not|unable to|not able to)[\s.!]*$/,
  // "I'm not comfortable with this request", "I'd rather not help with that"
  /\bi(?:'m| am) not comfortable (?:with (?:this|that|the|your) (?:request|task)|doing (?:this|that)|helping)\b/,
  /\bi(?:'d| would) rather not (?:help|assist|do|answer|write)\b/,
  // "That's not something I can help with"
  /\bnot something i (?:can|am able to|'m able to|will) (?:help|assist|do)\b/,
  // "I must decline this request", "I have to respectfully decline", "I refuse to": the task declined, not an
  // invitation declined in a drafted letter
  /\bi (?:must |have to |need to |will have to |'ll have to )?(?:respectfully |politely )?(?:decline|refuse)(?: to\b| (?:this|that|the|your) (?:request|task|question|prompt)\b|[.!,;]|$)/,
  // "As an AI language model, I cannot ...", "As an AI, I don't have access ..."
  /\bas an ai\b[^.!?]{0,100}\b(?:can ?not|can't|unable|not able|don't have|do not have|am not|'m not)\b/,
  // "This goes against my guidelines", "violates the content policy"
  /\b(?:goes against|violates|against|outside) my (?:guidelines|ethical guidelines|policies|policy|programming|principles|capabilities)\b/,
  /\bviolates? (?:the |our |my )?(?:content|usage) polic(?:y|ies)\b/,
  // "I don't have the ability to", "I do not have access to the internet"
  /\bi (?:do not|don't) have (?:the ability|the capability|the means|access|internet access|browsing)\b/,
];

/** Sentences that pad a refusal without adding content; they count toward "mostly a refusal" but never alone. */
const REFUSAL_PADDING: readonly RegExp[] = [
  /\b(?:sorry|apologi[sz]e|apologies|unfortunately|regrettably)\b/,
  /\banything else\b/,
  /\blet me know\b/,
  /\bhappy to help\b/,
  /\b(?:however|instead),? i (?:can|could|would)\b/,
  /\bi (?:can|could) (?:instead|however|help you with)\b/,
  /\bplease (?:consult|contact|refer|reach out|try)\b/,
];

const REFUSAL_SHARE = 0.5;

export function isRefusal(output: string): boolean {
  const text = output.toLowerCase().replace(/[\u2018\u2019\u02bc`]/g, "'");
  // A break after . ! or ? (and any closing quotes or brackets) followed by space, and at each line break; written
  // without a lookbehind, which would rescan a run of quotes at every position (quadratic on a long run).
  const sentences = text
    .replace(/([.!?]['")\]]*)\s+/g, "$1\n")
    .split(/\n+/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence !== "");
  let refusing = false;
  let refusalChars = 0;
  let totalChars = 0;
  for (const sentence of sentences) {
    const size = letterCount(sentence);
    totalChars += size;
    if (REFUSAL_PATTERNS.some((pattern) => pattern.test(sentence))) {
      refusing = true;
      refusalChars += size;
    } else if (REFUSAL_PADDING.some((pattern) => pattern.test(sentence))) {
      refusalChars += size;
    }
  }
  return refusing && totalChars > 0 && refusalChars / totalChars > REFUSAL_SHARE;
}

// ---- echo of the brief ----

/** Words that wrap a copied brief without answering it ("Task: ... Done.", "Sure! Here is ..."). */
const ECHO_FILLER: ReadonlySet<string> = new Set(
  "a an the here is are it this that your my you i as of to for task brief request question prompt answer output result response reply sure ok okay done below following requested asked".split(
    " ",
  ),
);
/** A copied excerpt of the brief counts as an echo when it is at least this share of the brief. */
const ECHO_EXCERPT_SHARE = 0.9;

/**
 * The brief handed back: the same text, nearly all of it, or all of it wrapped only in filler words. An output that
 * restates the brief and adds an answer ("The capital of France is Paris.") adds words of its own: not an echo.
 */
export function isEcho(output: string, brief: string): boolean {
  const out = comparable(output);
  const source = comparable(brief);
  if (source === "" || out === "") return false;
  if (out === source) return true;
  if (out.includes(source)) {
    const briefWords = new Set(source.split(" "));
    return out
      .replace(source, " ")
      .split(" ")
      .every((word) => word === "" || briefWords.has(word) || ECHO_FILLER.has(word));
  }
  return source.includes(out) && out.length >= source.length * ECHO_EXCERPT_SHARE;
}

/** Case, punctuation, symbols and spacing do not make an output different from the brief. */
function comparable(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

// ---- placeholders ----

const PLACEHOLDER_WORDS: ReadonlySet<string> = new Set([
  "todo",
  "tbd",
  "tba",
  "fixme",
  "placeholder",
  "n a",
  "na",
  "test",
  "testing",
  "test output",
  "your answer here",
  "answer here",
  "xxx",
  "asdf",
  "lorem ipsum",
  "null",
  "undefined",
  "nil",
  "placeholder text",
  "output goes here",
  "answer goes here",
  "result goes here",
]);

export function isPlaceholder(output: string): boolean {
  const trimmed = output.trim();
  // Nothing but punctuation and symbols: "...", "…", "-", "?", "[]", "{}".
  if (!/[\p{L}\p{N}]/u.test(trimmed)) return true;
  // "[insert summary here]", "<insert answer>", "{{ placeholder }}"
  if (/^[[<{(]+\s*(?:insert|your|add|put|enter|placeholder)\b[^\]>})]*[\]>})]+$/i.test(trimmed)) return true;
  // "{{output}}", "[Summary]": one bracketed name and nothing else.
  if (/^(?:\{\{[^{}]{0,40}\}\}|\[[^[\]]{1,40}\])$/.test(trimmed)) return true;
  const words = comparable(trimmed);
  // Filler text itself, not an answer that mentions it ("Lorem ipsum is placeholder text used in ...").
  if (/^lorem ipsum dolor\b/.test(words)) return true;
  // "TBD - will fill in later", "TODO: write this": a marker and words that only promise content.
  if (/^(?:todo|tbd|tba|fixme)(?: (?:will|to|be|fill|filled|in|later|write|this|here|add|soon|pending|coming))*$/.test(words)) return true;
  return PLACEHOLDER_WORDS.has(words);
}

function letterCount(text: string): number {
  return text.replace(/[^\p{L}\p{N}]/gu, "").length;
}

import { expect } from "chai";
import {
  BULK_AUTO_CRITERIA,
  checkRealContent,
  evaluate,
  isEcho,
  isPlaceholder,
  isRefusal,
  RENTAL_CRITERIA,
  validateCriteria,
  type VerificationCriteria,
} from "@market/core/verification";

const GOOD = "The quarterly report shows revenue of 4.2M, up 12% on last year, driven by the EU market.";

describe("core/verification: evaluate", () => {
  const table: {
    name: string;
    output: string;
    criteria: VerificationCriteria;
    brief?: string;
    passed: boolean;
    score: number;
    reasons: RegExp[];
  }[] = [
    { name: "one passing rule", output: GOOD, criteria: { min_length: 20 }, passed: true, score: 100, reasons: [] },
    {
      name: "too short",
      output: "Revenue is up.",
      criteria: { min_length: 20 },
      passed: false,
      score: 0,
      reasons: [/14 characters; at least 20/, /score 0 is below the pass threshold 100/],
    },
    {
      name: "length counts code points of the trimmed output",
      output: "   日本語のテキスト🚀🚀 \n",
      criteria: { min_length: 10, max_length: 10 },
      passed: true,
      score: 100,
      reasons: [],
    },
    {
      name: "too long",
      output: GOOD,
      criteria: { max_length: 20 },
      passed: false,
      score: 0,
      reasons: [/at most 20 allowed/, /below the pass threshold/],
    },
    {
      name: "keywords ignore case",
      output: GOOD,
      criteria: { contains_keywords: ["REVENUE", "eu market"] },
      passed: true,
      score: 100,
      reasons: [],
    },
    {
      name: "keywords match in any Unicode form (precomposed or combining accents)",
      output: "Meeting at the cafe\u0301 on Friday; the caf\u00e9 opens at 8.",
      criteria: { contains_keywords: ["caf\u00e9", "cafe\u0301"] },
      passed: true,
      score: 100,
      reasons: [],
    },
    {
      name: "missing keywords are named",
      output: GOOD,
      criteria: { contains_keywords: ["revenue", "profit", "margin"] },
      passed: false,
      score: 0,
      reasons: [/missing keywords: profit, margin/, /below the pass threshold/],
    },
    {
      name: "regex matches",
      output: GOOD,
      criteria: { regex_pattern: "\\d+(?:\\.\\d)?M" },
      passed: true,
      score: 100,
      reasons: [],
    },
    {
      name: "regex flags apply",
      output: GOOD,
      criteria: { regex_pattern: "^THE QUARTERLY", regex_flags: "i" },
      passed: true,
      score: 100,
      reasons: [],
    },
    {
      name: "regex misses",
      output: GOOD,
      criteria: { regex_pattern: "^\\{.*\\}$" },
      passed: false,
      score: 0,
      reasons: [/does not match the pattern/, /below the pass threshold/],
    },
    {
      name: "score rounds down: 2 of 3",
      output: GOOD,
      criteria: { min_length: 10, max_length: 20, contains_keywords: ["revenue"] },
      passed: false,
      score: 66,
      reasons: [/at most 20 allowed/, /score 66 is below the pass threshold 100/],
    },
    {
      name: "threshold forgives a failing rule but still names it",
      output: GOOD,
      criteria: { min_length: 10, max_length: 20, contains_keywords: ["revenue"], pass_threshold: 60 },
      passed: true,
      score: 66,
      reasons: [/at most 20 allowed/],
    },
    {
      name: "score 1 of 4 is 25",
      output: GOOD,
      criteria: { min_length: 10, max_length: 20, contains_keywords: ["zzz"], regex_pattern: "^x" },
      passed: false,
      score: 25,
      reasons: [/at most 20/, /missing keyword: zzz/, /does not match/, /score 25/],
    },
    {
      name: "a bulk row that meets its rule",
      output: "Done: 42 rows cleaned.",
      criteria: BULK_AUTO_CRITERIA,
      passed: true,
      score: 100,
      reasons: [],
    },
    {
      name: "a refusal fails a rental even when long enough",
      output: "I'm sorry, but I can't help with that request.",
      criteria: RENTAL_CRITERIA,
      passed: false,
      score: 100,
      reasons: [/refusal/],
    },
    {
      name: "an empty output",
      output: "   \n ",
      criteria: { max_length: 100 },
      passed: false,
      score: 100,
      reasons: [/empty/],
    },
    {
      name: "a placeholder",
      output: "TODO",
      criteria: { max_length: 100 },
      passed: false,
      score: 100,
      reasons: [/placeholder/],
    },
    {
      name: "an echo of the brief",
      output: "Summarise the attached article in three bullet points.",
      brief: "Summarise the attached article in three bullet points.",
      criteria: { min_length: 20 },
      passed: false,
      score: 100,
      reasons: [/repeats the brief/],
    },
    {
      name: "no rule configured scores 100 and still applies the content rules",
      output: GOOD,
      criteria: {},
      passed: true,
      score: 100,
      reasons: [],
    },
    {
      name: "threshold 0 with every rule failing still fails on content",
      output: "",
      criteria: { min_length: 5, pass_threshold: 0 },
      passed: false,
      score: 0,
      reasons: [/empty/, /at least 5/],
    },
    {
      name: "a pattern that does not compile counts as failed",
      output: GOOD,
      criteria: { regex_pattern: "(" },
      passed: false,
      score: 0,
      reasons: [/regex_pattern cannot be used/, /below the pass threshold/],
    },
    {
      name: "a pattern with a refused flag counts as failed",
      output: GOOD,
      criteria: { regex_pattern: "revenue", regex_flags: "g" },
      passed: false,
      score: 0,
      reasons: [/regex_pattern cannot be used/, /below the pass threshold/],
    },
  ];

  for (const { name, output, criteria, brief, passed, score, reasons } of table) {
    it(name, () => {
      const verdict = evaluate(output, criteria, { brief });
      expect({ passed: verdict.passed, score: verdict.score }).to.deep.equal({ passed, score });
      expect(verdict.reasons).to.have.length(reasons.length);
      reasons.forEach((pattern, index) => expect(verdict.reasons[index]).to.match(pattern));
    });
  }

  // Criteria stored without validateCriteria (the internal bypass): the static check would refuse this pattern.
  it("stops a catastrophic pattern at the time bound and fails that rule with a reason", () => {
    const started = Date.now();
    const verdict = evaluate(`${"a".repeat(40)}!`, { min_length: 5, regex_pattern: "^(a+)+$" }, { timeoutMs: 50 });
    expect(Date.now() - started).to.be.below(1_000);
    expect(verdict.passed).to.equal(false);
    expect(verdict.score).to.equal(50);
    expect(verdict.reasons[0]).to.match(/did not finish within 50 ms; counted as not matched/);
  });

  it("stops a slow pattern that passed validation, with the default bound", () => {
    const criteria = { regex_pattern: "\\d+x" };
    expect(validateCriteria(criteria, "auto")).to.deep.equal([]);
    const started = Date.now();
    const verdict = evaluate(`Order numbers: ${"1".repeat(100_000)}`, criteria);
    expect(Date.now() - started).to.be.below(1_000);
    expect(verdict).to.deep.include({ passed: false, score: 0 });
    expect(verdict.reasons[0]).to.match(/did not finish within 100 ms/);
  });
});

describe("core/verification: real-content rules", () => {
  const refusals = [
    "I can't help with that.",
    "I'm sorry, but I cannot assist with this request.",
    "As an AI language model, I cannot browse the internet.",
    "As an AI, I don't have access to real-time data. Is there anything else I can help you with?",
    "I’m unable to complete this task.",
    "I am not able to provide that information. Please consult a professional.",
    "Sorry, I can't do that.",
    "I must respectfully decline this request.",
    "I won't be able to write that. Let me know if there's anything else.",
    "This request goes against my guidelines.",
    "I'm afraid I can't do that. However, I can help you with something else!",
    "I CANNOT FULFILL THIS REQUEST.",
    "That's not something I can help with.",
    "Unfortunately, I do not have the ability to access external websites.",
    "I don't feel comfortable writing this.",
    "I'm not going to generate that content.",
    "I refuse to do this.",
    "I'm sorry, but I won't.",
    "I'm afraid I cannot.",
    "Sorry, I'm not able to.",
    "Sorry, I can't.",
    "I'm not comfortable with this request.",
    "I'd rather not help with that.",
  ];
  for (const output of refusals) {
    it(`refusal: ${JSON.stringify(output)}`, () => {
      expect(isRefusal(output)).to.equal(true);
      expect(checkRealContent(output)?.rule).to.equal("refusal");
    });
  }

  const notRefusals = [
    GOOD,
    "I cannot find any errors in the code; all 14 tests pass and the linter is clean.",
    "I can't wait to see the results! Here is the summary you asked for.",
    "I'm sorry, but I can't access that URL. Here is the analysis based on the text you pasted instead: the article " +
      "argues that remote work increased productivity by 13% in the study group, with lower attrition and fewer sick " +
      "days, while collaboration metrics declined slightly over the same period.",
    "Translation: Je ne peux pas vous aider avec cela.",
    "The customer wrote: 'I cannot complete the checkout.' The cause is an expired session token; refreshing fixes it.",
    "We are unable to offer a refund for this order, as it was placed more than 90 days ago. We can offer store credit.",
    "I can't help feeling this design is over-engineered. Recommendation: drop the cache layer.",
    "Unfortunately, the API does not support batching. I cannot help but notice the docs are outdated. Workaround: loop over items.",
    "Dear John,\n\nUnfortunately, I must decline your invitation to speak at the conference.\n\nBest regards,\nJane",
    "Response to user: I'm sorry, but I cannot process refunds after 30 days. Please contact support.",
    "I can't complete the migration without downtime; plan: 1. snapshot 2. switch DNS 3. verify.",
  ];
  for (const output of notRefusals) {
    it(`not a refusal: ${JSON.stringify(output.slice(0, 50))}`, () => {
      expect(isRefusal(output)).to.equal(false);
    });
  }

  const placeholders = [
    "TODO",
    "todo.",
    " Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
    "placeholder",
    "[insert summary here]",
    "<insert answer>",
    "N/A",
    "n/a",
    "...",
    "…",
    "-",
    "test",
    "TEST!",
    "TBD",
    "{{ placeholder }}",
    "[your answer]",
    "null",
    "undefined",
    "{{output}}",
    "[Summary]",
    "TBD - will fill in later",
    "placeholder text",
    "Output goes here",
  ];
  for (const output of placeholders) {
    it(`placeholder: ${JSON.stringify(output)}`, () => {
      expect(isPlaceholder(output)).to.equal(true);
      expect(checkRealContent(output)?.rule).to.equal("placeholder");
    });
  }

  const notPlaceholders = [
    "42",
    "Test results: 14 passed, 0 failed.",
    "TODO list: 1. buy milk 2. call Ann",
    "TODO list: buy milk, call Ann",
    "No",
    "none of the rows had errors",
    "Paris",
    "Lorem ipsum is placeholder text commonly used in print and web design since the 1500s.",
    "[1] Smith, J. (2020). On ledgers.",
  ];
  for (const output of notPlaceholders) {
    it(`not a placeholder: ${JSON.stringify(output)}`, () => {
      expect(isPlaceholder(output)).to.equal(false);
    });
  }

  const brief = "Write a short product description for a stainless steel water bottle that keeps drinks cold for 24 hours.";
  const echoes: [string, string][] = [
    ["the same text", brief],
    ["different case and punctuation", brief.toUpperCase().replace(/\./g, "!!")],
    ["wrapped in a little extra", `Task: ${brief} Done.`],
    ["with a filler preamble", `Sure! Here is the answer: ${brief}`],
    ["almost all of it", brief.slice(0, -8)],
  ];
  for (const [name, output] of echoes) {
    it(`echo: ${name}`, () => {
      expect(isEcho(output, brief)).to.equal(true);
      expect(checkRealContent(output, brief)?.rule).to.equal("echo");
    });
  }

  const notEchoes: [string, string, string][] = [
    ["an answer", "Keep it icy: double-walled steel holds drinks cold for a full day.", brief],
    ["a short part of the brief", "stainless steel water bottle", brief],
    [
      "the brief followed by a real answer",
      `${brief}\n\nMeet the FrostKeep: 18/8 stainless steel, vacuum insulated, cold for 24 hours, leak-proof lid, fits every cup holder.`,
      brief,
    ],
    ["a one-word answer found in the brief", "hello", "Reply with the word hello and nothing else."],
    ["a short brief restated with its answer", "The capital of France is Paris.", "Capital of France?"],
    ["a short brief followed by its answer", "Sentiment of 'I love it': positive", "Sentiment of 'I love it'"],
    ["a translation after the instruction", "Translate hello into German: Hallo", "Translate hello into German"],
    ["a question restated with its answer", "The largest planet in the solar system is Jupiter.", "Largest planet in the solar system?"],
  ];
  for (const [name, output, source] of notEchoes) {
    it(`not an echo: ${name}`, () => {
      expect(isEcho(output, source)).to.equal(false);
    });
  }

  it("accepts real content", () => {
    expect(checkRealContent(GOOD, brief)).to.equal(undefined);
  });

  it("takes time linear in the output, even on long runs of quotes and brackets", () => {
    for (const output of [`a${"'".repeat(499_000)}`, `Result ${"])".repeat(200_000)}`, `.${'"'.repeat(400_000)} x`]) {
      const started = Date.now();
      checkRealContent(output, "Summarise the report.");
      expect(Date.now() - started, output.slice(0, 12)).to.be.below(500);
    }
  });
});

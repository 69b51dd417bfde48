import { expect } from "chai";
import { BULK_AUTO_CRITERIA, CriteriaIssue, MAX_REGEX_PATTERN_CHARS, RENTAL_CRITERIA, validateCriteria } from "@market/core/verification";

describe("core/verification: validateCriteria", () => {
  const accepted: [string, unknown, string][] = [
    ["min_length", { min_length: 20 }, "auto"],
    ["max_length", { max_length: 500 }, "auto"],
    ["keywords", { contains_keywords: ["invoice", "total"] }, "auto"],
    ["safe regex", { regex_pattern: "^\\d{3}-\\d{4}$" }, "auto"],
    ["regex with flags", { regex_pattern: "^total: \\d+$", regex_flags: "im" }, "auto"],
    ["all rules and a threshold", { min_length: 1, max_length: 10, contains_keywords: ["a"], regex_pattern: "a", pass_threshold: 50 }, "auto"],
    ["threshold 0", { min_length: 5, pass_threshold: 0 }, "auto"],
    ["equal bounds", { min_length: 10, max_length: 10 }, "auto"],
    ["rental preset", RENTAL_CRITERIA, "auto"],
    ["bulk preset", BULK_AUTO_CRITERIA, "auto"],
    ["manual without criteria", undefined, "manual"],
    ["agent with null criteria", null, "agent"],
    ["manual with an empty object", {}, "manual"],
  ];
  for (const [name, criteria, mode] of accepted) {
    it(`accepts ${name} (${mode})`, () => {
      expect(validateCriteria(criteria, mode)).to.deep.equal([]);
    });
  }

  const refused: [string, unknown, string, { field: string; code: string }[]][] = [
    ["oracle mode", { min_length: 1 }, "oracle", [{ field: "verificationMode", code: CriteriaIssue.UNSUPPORTED_MODE }]],
    ["auto without criteria", undefined, "auto", [{ field: "verificationCriteria", code: CriteriaIssue.REQUIRED }]],
    ["auto with null", null, "auto", [{ field: "verificationCriteria", code: CriteriaIssue.REQUIRED }]],
    ["an array", [{ min_length: 1 }], "auto", [{ field: "verificationCriteria", code: CriteriaIssue.NOT_OBJECT }]],
    ["a string", "min_length=20", "manual", [{ field: "verificationCriteria", code: CriteriaIssue.NOT_OBJECT }]],
    ["auto with {}", {}, "auto", [{ field: "verificationCriteria", code: CriteriaIssue.NO_RULE }]],
    ["pass_threshold alone", { pass_threshold: 50 }, "auto", [{ field: "verificationCriteria", code: CriteriaIssue.NO_RULE }]],
    ["an unknown key", { min_length: 20, minLength: 20 }, "auto", [{ field: "verificationCriteria.minLength", code: CriteriaIssue.UNKNOWN_KEY }]],
    [
      "only unknown keys",
      { minLength: 20 },
      "auto",
      [
        { field: "verificationCriteria.minLength", code: CriteriaIssue.UNKNOWN_KEY },
        { field: "verificationCriteria", code: CriteriaIssue.NO_RULE },
      ],
    ],
    ["unknown key in manual mode", { foo: 1 }, "manual", [{ field: "verificationCriteria.foo", code: CriteriaIssue.UNKNOWN_KEY }]],
    ["min_length as text", { min_length: "20" }, "auto", [{ field: "verificationCriteria.min_length", code: CriteriaIssue.NOT_INTEGER }]],
    ["min_length fractional", { min_length: 2.5 }, "auto", [{ field: "verificationCriteria.min_length", code: CriteriaIssue.NOT_INTEGER }]],
    ["min_length 0", { min_length: 0 }, "auto", [{ field: "verificationCriteria.min_length", code: CriteriaIssue.OUT_OF_RANGE }]],
    ["max_length negative", { max_length: -1 }, "auto", [{ field: "verificationCriteria.max_length", code: CriteriaIssue.OUT_OF_RANGE }]],
    ["max_length NaN", { max_length: NaN }, "auto", [{ field: "verificationCriteria.max_length", code: CriteriaIssue.NOT_INTEGER }]],
    [
      "min above max",
      { min_length: 50, max_length: 10 },
      "auto",
      [{ field: "verificationCriteria.max_length", code: CriteriaIssue.LENGTH_RANGE_EMPTY }],
    ],
    [
      "keywords as text",
      { contains_keywords: "invoice" },
      "auto",
      [{ field: "verificationCriteria.contains_keywords", code: CriteriaIssue.KEYWORDS_NOT_LIST }],
    ],
    [
      "empty keyword list",
      { contains_keywords: [] },
      "auto",
      [{ field: "verificationCriteria.contains_keywords", code: CriteriaIssue.KEYWORDS_EMPTY }],
    ],
    [
      "blank and non-text keywords",
      { contains_keywords: ["ok", " ", 3] },
      "auto",
      [
        { field: "verificationCriteria.contains_keywords[1]", code: CriteriaIssue.KEYWORD_INVALID },
        { field: "verificationCriteria.contains_keywords[2]", code: CriteriaIssue.KEYWORD_INVALID },
      ],
    ],
    [
      "a keyword that is too long",
      { contains_keywords: ["k".repeat(201)] },
      "auto",
      [{ field: "verificationCriteria.contains_keywords[0]", code: CriteriaIssue.KEYWORD_INVALID }],
    ],
    [
      "too many keywords",
      { contains_keywords: Array.from({ length: 51 }, (_, i) => `k${i}`) },
      "auto",
      [{ field: "verificationCriteria.contains_keywords", code: CriteriaIssue.TOO_MANY_KEYWORDS }],
    ],
    ["regex not text", { regex_pattern: 5 }, "auto", [{ field: "verificationCriteria.regex_pattern", code: CriteriaIssue.REGEX_NOT_STRING }]],
    ["empty regex", { regex_pattern: "" }, "auto", [{ field: "verificationCriteria.regex_pattern", code: CriteriaIssue.REGEX_NOT_STRING }]],
    [
      "regex that does not compile",
      { regex_pattern: "(abc" },
      "auto",
      [{ field: "verificationCriteria.regex_pattern", code: CriteriaIssue.REGEX_INVALID }],
    ],
    [
      "regex with a bad escape under u",
      { regex_pattern: "\\q", regex_flags: "u" },
      "auto",
      [{ field: "verificationCriteria.regex_pattern", code: CriteriaIssue.REGEX_INVALID }],
    ],
    [
      "regex too long",
      { regex_pattern: "a".repeat(MAX_REGEX_PATTERN_CHARS + 1) },
      "auto",
      [{ field: "verificationCriteria.regex_pattern", code: CriteriaIssue.REGEX_TOO_LONG }],
    ],
    ["catastrophic regex", { regex_pattern: "^(a+)+$" }, "auto", [{ field: "verificationCriteria.regex_pattern", code: CriteriaIssue.REGEX_UNSAFE }]],
    [
      "unsafe regex in manual mode",
      { regex_pattern: "(a|a)*" },
      "manual",
      [{ field: "verificationCriteria.regex_pattern", code: CriteriaIssue.REGEX_UNSAFE }],
    ],
    [
      "global flag",
      { regex_pattern: "a", regex_flags: "g" },
      "auto",
      [{ field: "verificationCriteria.regex_flags", code: CriteriaIssue.REGEX_FLAGS_INVALID }],
    ],
    [
      "repeated flag",
      { regex_pattern: "a", regex_flags: "ii" },
      "auto",
      [{ field: "verificationCriteria.regex_flags", code: CriteriaIssue.REGEX_FLAGS_INVALID }],
    ],
    [
      "flags as a list",
      { regex_pattern: "a", regex_flags: ["i"] },
      "auto",
      [{ field: "verificationCriteria.regex_flags", code: CriteriaIssue.REGEX_FLAGS_INVALID }],
    ],
    [
      "flags without a pattern",
      { min_length: 3, regex_flags: "i" },
      "auto",
      [{ field: "verificationCriteria.regex_flags", code: CriteriaIssue.REGEX_FLAGS_INVALID }],
    ],
    [
      "threshold above 100",
      { min_length: 3, pass_threshold: 101 },
      "auto",
      [{ field: "verificationCriteria.pass_threshold", code: CriteriaIssue.OUT_OF_RANGE }],
    ],
    [
      "threshold below 0",
      { min_length: 3, pass_threshold: -5 },
      "auto",
      [{ field: "verificationCriteria.pass_threshold", code: CriteriaIssue.OUT_OF_RANGE }],
    ],
    [
      "threshold as text",
      { min_length: 3, pass_threshold: "60" },
      "auto",
      [{ field: "verificationCriteria.pass_threshold", code: CriteriaIssue.NOT_INTEGER }],
    ],
    [
      "fractional threshold",
      { min_length: 3, pass_threshold: 60.5 },
      "auto",
      [{ field: "verificationCriteria.pass_threshold", code: CriteriaIssue.NOT_INTEGER }],
    ],
  ];
  for (const [name, criteria, mode, expected] of refused) {
    it(`refuses ${name}`, () => {
      const issues = validateCriteria(criteria, mode);
      expect(issues.map(({ field, code }) => ({ field, code }))).to.deep.equal(expected);
      for (const issue of issues) expect(issue.message).to.be.a("string").and.not.equal("");
    });
  }

  it("presets are the spec's values and frozen", () => {
    expect(RENTAL_CRITERIA).to.deep.equal({ min_length: 20 });
    expect(BULK_AUTO_CRITERIA).to.deep.equal({ min_length: 10, pass_threshold: 60 });
    expect(Object.isFrozen(RENTAL_CRITERIA) && Object.isFrozen(BULK_AUTO_CRITERIA)).to.equal(true);
  });
});

import { expect } from "chai";
import fc from "fast-check";
import { findRegexHazard, testRegexWithin, validateCriteria, type RegexHazardKind } from "@market/core/verification";

describe("core/verification: regex safety", () => {
  const unsafe: [string, RegexHazardKind, string?][] = [
    ["^(a+)+$", "nested_quantifier"],
    ["(.*)*", "nested_quantifier"],
    ["(a*)*", "nested_quantifier"],
    ["(\\w+\\s?)+$", "nested_quantifier"],
    ["([a-z]+)*@", "nested_quantifier"],
    ["(a{1,3}){5}", "nested_quantifier"],
    ["(?:x(?:y+)z)+", "nested_quantifier"],
    ["(a+){2}", "nested_quantifier"],
    ["(?=(a+))+", "nested_quantifier"],
    ["(a|a)*", "overlapping_alternation"],
    ["(a|ab)+", "overlapping_alternation"],
    ["(\\w|\\d)*$", "overlapping_alternation"],
    ["(?:[a-f]|[e-z])+", "overlapping_alternation"],
    ["(?:.|\\n)*", "overlapping_alternation", "s"],
    ["(?:a|A)+", "overlapping_alternation", "i"],
    ["^(?:k|\\u212A)+$", "overlapping_alternation", "iu"],
    ["^(?:s|\u017F)+$", "overlapping_alternation", "iu"],
    ["(?:x|)+", "empty_repeat"],
    ["(?:^)*", "empty_repeat"],
    ["\\d+\\d+", "adjacent_overlap"],
    [".*.*=", "adjacent_overlap"],
    ["\\d+\\.?\\d+", "adjacent_overlap"],
    ["\\w+\\s*\\w+$", "adjacent_overlap"],
    ["(\\d+)?\\d+", "adjacent_overlap"],
    ["x\\w*(?:[0-9]+y)", "adjacent_overlap"],
    ["[a-z]+[A-Z]+", "adjacent_overlap", "i"],
    ["a?a?a?a?a?a?a?a?a?a?a?aaaaaaaaaaab", "ambiguous_choices"],
    ["(?:a|a)(?:a|a)(?:a|a)(?:a|a)(?:a|a)(?:a|a)(?:a|a)(?:a|a)(?:a|a)(?:a|a)(?:a|a)", "ambiguous_choices"],
    ["(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)(?:a|aa)", "ambiguous_choices"],
    ["a?aa?aa?aa?aa?aa?aa?aa?aa?aa?aa?aa?a", "ambiguous_choices"],
    ["x{1,40}x{1,40}x{1,40}y", "ambiguous_choices"],
    ["^.*a.*a.*a.*b$", "ambiguous_choices"],
    [".*a.*a.*b", "ambiguous_choices"],
    [`${"(?:(?:a|b)c|d)?".repeat(12)}`, "ambiguous_choices"],
    ["(a)\\1", "backreference"],
    ["(?<w>\\w)\\k<w>", "backreference"],
    ["a{1001}", "large_repeat"],
    ["a{2,5000}", "large_repeat"],
    // Legacy octal escapes: \01 is one character (U+0001), not NUL and "1", so these branches overlap.
    ["^(?:\\01|\\x01)+$", "unsupported_syntax"],
    ["(?:\\011|\\t)+x", "unsupported_syntax"],
    ["[\\1]+", "unsupported_syntax"],
  ];
  for (const [pattern, kind, flags] of unsafe) {
    it(`refuses /${pattern}/${flags ?? ""} as ${kind}`, () => {
      expect(() => new RegExp(pattern, flags)).to.not.throw();
      expect(findRegexHazard(pattern, flags)?.kind).to.equal(kind);
    });
  }

  const safe: [string, string?][] = [
    ["^\\d{3}-\\d{4}$"],
    ["^[A-Z]{2}\\d{4}$"],
    ["\\bfoo\\b"],
    ["^\\{.*\\}$"],
    ['"status":\\s*"ok"'],
    ["^(?:\\d{3}-)?\\d{4}$"],
    ["(a|b)*c"],
    ["^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$"],
    ["(ab){3}"],
    ["(?:x[a-c])+"],
    ["https?://\\S+"],
    ["[\\d-x]+"],
    ["\\p{L}+", "u"],
    ["(a{2})+"],
    ["x*y*"],
    ["[a-z]+[A-Z]+"],
    ["^total: \\d+(?:\\.\\d{2})?$", "im"],
    ["(?<year>\\d{4})-(?<month>\\d{2})"],
    ["(?<=\\$)\\d+"],
    ["^#{1,6} .+$", "m"],
    ["\\u{1F600}+", "u"],
    ["[\\]]+\\[+"],
    ["a{2,1000}"],
    ["{"],
    ["a?a?a?a?a?a?a?a?a?a?aaaaaaaaaab"],
    [".*a.*b"],
    ["^.*error.*$"],
    ["(?:Mr|Mrs|Ms)\\.? [A-Z][a-z]+"],
    ["\\b(?:cat|car|cart)s?\\b"],
    ["^\\s*(\\d+)\\s*,\\s*(\\d+)\\s*$"],
    ["-?\\d+(?:\\.\\d+)?"],
    ["colou?r"],
    ["\\d+x"],
    ["x{1,40}x{1,40}y"],
    [`${"(?:(?:a|b)c|d)?".repeat(11)}`],
  ];
  for (const [pattern, flags] of safe) {
    it(`lets /${pattern}/${flags ?? ""} through`, () => {
      expect(() => new RegExp(pattern, flags)).to.not.throw();
      expect(findRegexHazard(pattern, flags)).to.equal(undefined);
    });
  }

  describe("time bound (node:vm timeout)", () => {
    it("matches and misses within the bound", () => {
      expect(testRegexWithin(/^\d+$/, "12345")).to.deep.equal({ outcome: "matched" });
      expect(testRegexWithin(/^\d+$/, "12a45")).to.deep.equal({ outcome: "not_matched" });
    });

    it("ignores a global regex's lastIndex", () => {
      const regex = /b/g;
      regex.lastIndex = 5;
      expect(testRegexWithin(regex, "abc")).to.deep.equal({ outcome: "matched" });
    });

    it("stops ^(a+)+$ on 40 a's and a ! (hours of backtracking) at the bound", () => {
      const started = Date.now();
      expect(testRegexWithin(/^(a+)+$/, `${"a".repeat(40)}!`, 50)).to.deep.equal({ outcome: "timed_out" });
      expect(Date.now() - started).to.be.below(1_000);
    });

    it("stops a quadratic search that the static check lets through", () => {
      const pattern = "\\d+x";
      expect(validateCriteria({ regex_pattern: pattern }, "auto")).to.deep.equal([]);
      const started = Date.now();
      // Every start position runs \d+ to the end and back: about 5 * 10^9 steps, twenty-odd seconds unbounded.
      expect(testRegexWithin(new RegExp(pattern), "1".repeat(100_000), 50)).to.deep.equal({ outcome: "timed_out" });
      expect(Date.now() - started).to.be.below(1_000);
    });
  });
});

describe("core/verification: regex safety on generated patterns", () => {
  // Built from regex syntax so most samples compile; the check must answer (never throw) for every pattern that does.
  const token = fc.constantFrom(
    "a",
    "b",
    ".",
    "\\d",
    "\\w",
    "\\s",
    "\\b",
    "\\1",
    "\\k<n>",
    "[a-c]",
    "[^x]",
    "[\\]-]",
    "(",
    ")",
    "(?:",
    "(?=",
    "(?<n>",
    "(?<!",
    "|",
    "*",
    "+",
    "?",
    "{2}",
    "{1,}",
    "{0,3}",
    "*?",
    "^",
    "$",
    "{",
    "}",
    "]",
    "\\u0041",
    "\\x41",
    "\\p{L}",
    "\\c",
  );
  it("classifies every compiling pattern without throwing", () => {
    fc.assert(
      fc.property(fc.array(token, { maxLength: 14 }), fc.constantFrom("", "i", "u", "s", "imsu"), (parts, flags) => {
        const pattern = parts.join("");
        try {
          new RegExp(pattern, flags);
        } catch {
          return;
        }
        const hazard = findRegexHazard(pattern, flags);
        expect(hazard === undefined || typeof hazard.kind === "string").to.equal(true);
      }),
      { numRuns: 1_000, seed: 20_240_601 },
    );
  });

  // What the check promises: nothing it lets through backtracks exponentially. At about 28 characters an
  // exponential pattern takes seconds and a polynomial one (which may pass, see regex-safety.ts) microseconds.
  // Patterns are built from a grammar, so they always compile and nest repeats, groups and alternations freely.
  const { pattern: structured } = fc.letrec<{ pattern: string; item: string; atom: string }>((tie) => ({
    atom: fc.constantFrom("a", "b", "ab", ".", "\\d", "\\w", "\\s", "[ab]", "[^b]", "\\b", "^", "$"),
    item: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      tie("atom"),
      fc.tuple(tie("pattern"), fc.constantFrom("*", "+", "?", "{2}", "{1,3}", "{2,}", "*?")).map(([body, q]) => `(?:${body})${q}`),
      fc.tuple(tie("pattern"), tie("pattern")).map(([x, y]) => `(?:${x}|${y})`),
    ),
    pattern: fc.array(tie("item"), { minLength: 1, maxLength: 4 }).map((items) => items.join("")),
  }));

  it("passes no generated pattern that backtracks exponentially", () => {
    const inputs = ["a".repeat(28) + "!", "ab".repeat(14) + "!", "1".repeat(28) + "x", "a b ".repeat(7) + "\n!"];
    let checked = 0;
    fc.assert(
      fc.property(structured, fc.constantFrom("", "i"), (pattern, flags) => {
        const regex = new RegExp(pattern, flags);
        if (findRegexHazard(pattern, flags) !== undefined) return;
        checked++;
        for (const input of inputs) {
          expect(testRegexWithin(regex, input, 250).outcome, `/${pattern}/${flags} on ${JSON.stringify(input)}`).to.not.equal("timed_out");
        }
      }),
      { numRuns: 400, seed: 7 },
    );
    expect(checked).to.be.above(50);
  });

  it("an input of that size does time out an exponential pattern", () => {
    expect(testRegexWithin(/^(a+)+$/, "a".repeat(28) + "!", 250).outcome).to.equal("timed_out");
  });
});

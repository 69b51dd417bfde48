/**
 * Static check that a verification regex cannot backtrack catastrophically, run when a task is posted.
 *
 * Heuristic (conservative: it refuses some patterns that are in fact fast). What it promises is no exponential
 * backtracking, in the input's length or in the pattern's; polynomial work is only partly caught (rules 4 and 5)
 * and the time bound in `regex-run.ts` is the backstop for the rest, e.g. `\d+x` searched in 100,000 digits.
 *
 * 1. No backreferences (`\1`, `\k<name>`): matching with them is NP-hard in general.
 * 2. A repeat that can run more than once (`*`, `+`, `{2,}`, `{3}` ...) may not contain a variable repeat
 *    (`(a+)+`, `(.*)*`, `(\w+\s?)+`, `(a{1,3}){5}`) nor a body that can match the empty string (`(a?)*`, `(|a)+`).
 * 3. Such a repeat may not contain an alternation whose branches can start with the same character, or one of
 *    whose branches can be empty (`(a|a)*`, `(a|ab)+`, `(\w|\d)*`).
 * 4. Two unbounded repeats in one sequence, separated only by parts that can match empty, may not share a
 *    character (`\d+\d+`, `.*.*`, `\d+\.?\d+`, `\w+\s*\w+`): the input can be split between them in n ways.
 * 5. The ways the pattern can match one text are bounded (AMBIGUITY_BUDGET): each ambiguous choice multiplies
 *    them. A choice is ambiguous when an alternation has branches that can start alike (`(?:a|ab)` counts its
 *    branches), or when a variable repeat can consume a character that could also start what follows it (`a?a`
 *    counts 2, `a{1,4}a` counts 4, `.*x` counts UNBOUNDED_CHOICES). So `a?a?a?...aaa` and `(?:a|a)(?:a|a)...`,
 *    exponential in the pattern's length, are refused, and so is more than two `.*`-like runs before what they
 *    could also match (`.*a.*a.*b`); `^.*error.*$` passes.
 * 6. Counted repeats are at most {1000}, and the pattern itself at most MAX_REGEX_PATTERN_CHARS long.
 * 7. Syntax the parser does not follow is refused rather than guessed at.
 *
 * Character overlap is computed on sets of code points. Under `i`, ASCII letters gain their other case and any
 * non-ASCII character is taken to overlap every letter; Unicode property classes count as any character.
 */
import { ANY_CHAR, EMPTY_SET, intersects, isEmpty, union, type CharSet } from "./charset";
import { parseRegex, RegexParseError, type RegexNode } from "./regex-parse";

export const MAX_REGEX_PATTERN_CHARS = 500;
export const MAX_REGEX_REPEAT_COUNT = 1_000;
/** Most ways (see rule 5) the pattern may match one text. */
export const AMBIGUITY_BUDGET = 1_024;
/** Weight of an unbounded repeat that can run into what follows it: two of them use the whole budget. */
export const UNBOUNDED_CHOICES = 32;

export type RegexHazardKind =
  | "backreference"
  | "nested_quantifier"
  | "empty_repeat"
  | "overlapping_alternation"
  | "adjacent_overlap"
  | "ambiguous_choices"
  | "large_repeat"
  | "unsupported_syntax";

export interface RegexHazard {
  kind: RegexHazardKind;
  message: string;
}

/** The first reason the pattern could backtrack catastrophically, or undefined if it passes the heuristic. */
export function findRegexHazard(pattern: string, flags = ""): RegexHazard | undefined {
  let root: RegexNode;
  try {
    root = parseRegex(pattern, flags);
  } catch (error) {
    if (!(error instanceof RegexParseError)) throw error;
    return { kind: "unsupported_syntax", message: `pattern uses syntax the safety check does not follow: ${error.message}` };
  }
  const found = inspect(root, false);
  if (found) return found;
  if (matchWays(root, EMPTY_SET) > AMBIGUITY_BUDGET) {
    return hazard(
      "ambiguous_choices",
      "the pattern can match the same text in too many ways, as in a?a?a?aaa or .*a.*a.*b; make its parts exclusive",
    );
  }
  return undefined;
}

/** Walks the tree; `underRepeat` is true inside the body of a repeat that can run more than once. */
function inspect(node: RegexNode, underRepeat: boolean): RegexHazard | undefined {
  switch (node.kind) {
    case "char":
    case "assertion":
      return undefined;
    case "backreference":
      return hazard("backreference", "backreferences are not allowed");
    case "repeat": {
      if ((Number.isFinite(node.max) && node.max > MAX_REGEX_REPEAT_COUNT) || node.min > MAX_REGEX_REPEAT_COUNT) {
        return hazard("large_repeat", `counted repeats may not exceed {${MAX_REGEX_REPEAT_COUNT}}`);
      }
      const repeats = node.max > 1;
      if (repeats && containsVariableRepeat(node.body)) {
        return hazard("nested_quantifier", "a repeated group may not contain another quantifier, as in (a+)+");
      }
      if (repeats && nullable(node.body)) {
        return hazard("empty_repeat", "a repeated group may not be able to match the empty string, as in (a?)*");
      }
      return inspect(node.body, underRepeat || repeats);
    }
    case "group": {
      if (underRepeat && node.alternatives.length > 1) {
        const overlap = overlappingBranches(node.alternatives);
        if (overlap) return hazard("overlapping_alternation", overlap);
      }
      for (const sequence of node.alternatives) {
        const found = adjacentOverlap(sequence) ?? firstHazard(sequence, underRepeat);
        if (found) return found;
      }
      return undefined;
    }
  }
}

function firstHazard(sequence: readonly RegexNode[], underRepeat: boolean): RegexHazard | undefined {
  for (const item of sequence) {
    const found = inspect(item, underRepeat);
    if (found) return found;
  }
  return undefined;
}

function overlappingBranches(alternatives: readonly RegexNode[][]): string | undefined {
  const firsts: CharSet[] = [];
  for (const sequence of alternatives) {
    if (sequenceNullable(sequence)) {
      return "a repeated alternation may not have a branch that matches the empty string, as in (|a)*";
    }
    const first = sequenceFirst(sequence);
    if (firsts.some((other) => intersects(other, first))) {
      return "branches of a repeated alternation may not start with the same character, as in (a|ab)*";
    }
    firsts.push(first);
  }
  return undefined;
}

function adjacentOverlap(sequence: readonly RegexNode[]): RegexHazard | undefined {
  for (let i = 0; i < sequence.length; i++) {
    const tail = trailingUnbounded(sequence[i]!);
    if (isEmpty(tail)) continue;
    for (let j = i + 1; j < sequence.length; j++) {
      const next = sequence[j]!;
      if (intersects(tail, leadingUnbounded(next))) {
        return hazard("adjacent_overlap", "two unbounded repeats that can match the same character may not follow each other, as in \\d+\\d+");
      }
      if (!nullable(next)) break;
    }
  }
  return undefined;
}

/**
 * Upper bound on the ways `node` can match one text, given `follow`: the characters that can come right after it.
 * Rules 2 and 3 already hold here, so a body repeated more than once matches in one way.
 */
function matchWays(node: RegexNode, follow: CharSet): number {
  switch (node.kind) {
    case "char":
    case "assertion":
    case "backreference":
      return 1;
    case "group": {
      // What follows inside a lookaround is not known here: assume anything.
      const after = node.zeroWidth ? ANY_CHAR : follow;
      const counts = node.alternatives.map((sequence) => sequenceWays(sequence, after));
      if (counts.length === 1) return counts[0]!;
      return branchesMayOverlap(node.alternatives, after) ? counts.reduce((a, b) => a + b, 0) : Math.max(...counts);
    }
    case "repeat": {
      const again = node.max > 1 ? union(first(node.body), follow) : follow;
      let ways = matchWays(node.body, again);
      if (node.max > 1 && ways > 1) ways = Infinity;
      if (node.min !== node.max && (nullable(node.body) || intersects(consumed(node.body), follow))) {
        ways *= Number.isFinite(node.max) ? node.max - node.min + 1 : UNBOUNDED_CHOICES;
      }
      return ways;
    }
  }
}

function sequenceWays(sequence: readonly RegexNode[], follow: CharSet): number {
  let ways = 1;
  for (let i = 0; i < sequence.length && ways <= AMBIGUITY_BUDGET; i++) {
    ways *= matchWays(sequence[i]!, followAfter(sequence, i, follow));
  }
  return ways;
}

/** Characters that can come right after item `i` of a sequence. */
function followAfter(sequence: readonly RegexNode[], i: number, follow: CharSet): CharSet {
  let set = EMPTY_SET;
  for (let j = i + 1; j < sequence.length; j++) {
    set = union(set, first(sequence[j]!));
    if (!nullable(sequence[j]!)) return set;
  }
  return union(set, follow);
}

function branchesMayOverlap(alternatives: readonly RegexNode[][], follow: CharSet): boolean {
  const starts = alternatives.map((sequence) => (sequenceNullable(sequence) ? union(sequenceFirst(sequence), follow) : sequenceFirst(sequence)));
  return starts.some((start, i) => starts.some((other, j) => j > i && intersects(start, other)));
}

function containsVariableRepeat(node: RegexNode): boolean {
  switch (node.kind) {
    case "repeat":
      return node.min !== node.max || containsVariableRepeat(node.body);
    case "group":
      return node.alternatives.some((sequence) => sequence.some(containsVariableRepeat));
    default:
      return false;
  }
}

// The tree is immutable once parsed; these facts are asked of the same nodes many times.
const nullableCache = new WeakMap<RegexNode, boolean>();
const firstCache = new WeakMap<RegexNode, CharSet>();
const consumedCache = new WeakMap<RegexNode, CharSet>();

function nullable(node: RegexNode): boolean {
  return memo(nullableCache, node, nullableUncached);
}

/** Characters a match of `node` can start with. */
function first(node: RegexNode): CharSet {
  return memo(firstCache, node, firstUncached);
}

/** Every character `node` can consume. */
function consumed(node: RegexNode): CharSet {
  return memo(consumedCache, node, consumedUncached);
}

function memo<T>(cache: WeakMap<RegexNode, T>, node: RegexNode, compute: (node: RegexNode) => T): T {
  let value = cache.get(node);
  if (value === undefined) {
    value = compute(node);
    cache.set(node, value);
  }
  return value;
}

function nullableUncached(node: RegexNode): boolean {
  switch (node.kind) {
    case "char":
      return false;
    case "assertion":
    case "backreference":
      return true;
    case "repeat":
      return node.min === 0 || nullable(node.body);
    case "group":
      return node.zeroWidth || node.alternatives.some(sequenceNullable);
  }
}

function sequenceNullable(sequence: readonly RegexNode[]): boolean {
  return sequence.every(nullable);
}

function firstUncached(node: RegexNode): CharSet {
  switch (node.kind) {
    case "char":
      return node.set;
    case "assertion":
    case "backreference":
      return EMPTY_SET;
    case "repeat":
      return first(node.body);
    case "group":
      return node.zeroWidth ? EMPTY_SET : node.alternatives.map(sequenceFirst).reduce(union, EMPTY_SET);
  }
}

function sequenceFirst(sequence: readonly RegexNode[]): CharSet {
  let set = EMPTY_SET;
  for (const item of sequence) {
    set = union(set, first(item));
    if (!nullable(item)) break;
  }
  return set;
}

function consumedUncached(node: RegexNode): CharSet {
  switch (node.kind) {
    case "char":
      return node.set;
    case "assertion":
    case "backreference":
      return EMPTY_SET;
    case "repeat":
      return consumed(node.body);
    case "group":
      return node.zeroWidth ? EMPTY_SET : node.alternatives.flat().map(consumed).reduce(union, EMPTY_SET);
  }
}

/** Characters of unbounded repeats that a match of `node` can begin inside (`\d+`, `(\d+x)`, `(y?\d*)`). */
function leadingUnbounded(node: RegexNode): CharSet {
  return edgeUnbounded(node, (sequence) => sequence);
}

/** Characters of unbounded repeats that a match of `node` can end inside. */
function trailingUnbounded(node: RegexNode): CharSet {
  return edgeUnbounded(node, (sequence) => [...sequence].reverse());
}

function edgeUnbounded(node: RegexNode, order: (sequence: readonly RegexNode[]) => readonly RegexNode[]): CharSet {
  switch (node.kind) {
    case "char":
    case "assertion":
    case "backreference":
      return EMPTY_SET;
    case "repeat":
      return node.max === Infinity ? consumed(node.body) : edgeUnbounded(node.body, order);
    case "group": {
      if (node.zeroWidth) return EMPTY_SET;
      let set = EMPTY_SET;
      for (const sequence of node.alternatives) {
        for (const item of order(sequence)) {
          set = union(set, edgeUnbounded(item, order));
          if (!nullable(item)) break;
        }
      }
      return set;
    }
  }
}

function hazard(kind: RegexHazardKind, message: string): RegexHazard {
  return { kind, message };
}

/**
 * The least an output must hold for a regex to match somewhere in it, decided from the pattern alone (the unsatisfiable
 * criteria check: docs/security.md). Lookarounds, anchors and backreferences count as nothing; an empty class (`[]`)
 * never matches, so a pattern that needs one needs infinitely much.
 */
import { intersects, LINE_TERMINATOR, range, SPACE, union, type CharSet } from "./charset";
import { parseRegex, type RegexNode } from "./regex-parse";

export interface LeastMatch {
  /** Characters (code points) of the shortest match; Infinity when the pattern can match nothing. */
  chars: number;
  /** Of those, characters that `trim()` can never remove (no whitespace or line terminator can be one). */
  solid: number;
}

/** What `String.prototype.trim` removes. */
const TRIMMED: CharSet = union(SPACE, LINE_TERMINATOR);
const SURROGATES: CharSet = range(0xd800, 0xdfff);

/** Undefined when the pattern is not one the parser follows (nothing is decided then). */
export function leastMatch(pattern: string, flags: string): LeastMatch | undefined {
  let root: RegexNode;
  try {
    root = parseRegex(pattern, flags);
  } catch {
    return undefined;
  }
  const unicode = flags.includes("u");
  // Counted in half characters: without `u` a pattern character is a UTF-16 unit, and two surrogates are one character.
  const half = (set: CharSet) => (unicode || !intersects(set, SURROGATES) ? 2 : 1);
  const chars = least(root, half);
  const solid = least(root, (set) => (intersects(set, TRIMMED) ? 0 : half(set)));
  return { chars: Math.ceil(chars / 2), solid: Math.ceil(solid / 2) };
}

/** The least total `weight` of the characters of a match. */
function least(node: RegexNode, weight: (set: CharSet) => number): number {
  switch (node.kind) {
    case "char":
      return node.set.length === 0 ? Infinity : weight(node.set);
    case "assertion":
    case "backreference":
      return 0;
    case "group":
      if (node.zeroWidth) return 0;
      return Math.min(...node.alternatives.map((sequence) => sequence.reduce((sum, item) => sum + least(item, weight), 0)));
    case "repeat":
      return node.min === 0 ? 0 : node.min * least(node.body, weight);
  }
}

/**
 * A small parser of JavaScript regex syntax into the shape the safety check reasons about. It runs only on
 * patterns that `new RegExp(pattern, flags)` already accepted, so it resolves what each token means rather than
 * reporting syntax errors; anything it cannot follow makes it throw, and the caller treats that as unsafe.
 */
import { ANY_CHAR, complement, DIGIT, EMPTY_SET, foldCase, LINE_TERMINATOR, range, single, SPACE, union, WORD, type CharSet } from "./charset";

export type RegexNode =
  /** One character out of `set` (a literal, a class, `.` or a class escape). */
  | { kind: "char"; set: CharSet }
  /** Zero-width: `^`, `$`, `\b`, `\B`. */
  | { kind: "assertion" }
  | { kind: "backreference" }
  /** Any parenthesised group; lookarounds are zero-width. */
  | { kind: "group"; alternatives: RegexNode[][]; zeroWidth: boolean }
  | { kind: "repeat"; min: number; max: number; body: RegexNode };

export class RegexParseError extends Error {}

export function parseRegex(pattern: string, flags: string): RegexNode {
  return new Parser(pattern, flags).parse();
}

class Parser {
  private pos = 0;
  private readonly ignoreCase: boolean;
  private readonly dotAll: boolean;
  private readonly unicode: boolean;

  constructor(
    private readonly src: string,
    flags: string,
  ) {
    this.ignoreCase = flags.includes("i");
    this.dotAll = flags.includes("s");
    this.unicode = flags.includes("u") || flags.includes("v");
  }

  parse(): RegexNode {
    const alternatives = this.parseAlternatives();
    if (this.pos !== this.src.length) throw new RegexParseError(`unexpected ${this.src[this.pos]} at ${this.pos}`);
    return { kind: "group", alternatives, zeroWidth: false };
  }

  private parseAlternatives(): RegexNode[][] {
    const alternatives = [this.parseSequence()];
    while (this.peek() === "|") {
      this.pos++;
      alternatives.push(this.parseSequence());
    }
    return alternatives;
  }

  private parseSequence(): RegexNode[] {
    const items: RegexNode[] = [];
    while (this.pos < this.src.length && this.peek() !== "|" && this.peek() !== ")") {
      items.push(this.parseQuantified(this.parseAtom()));
    }
    return items;
  }

  private parseQuantified(atom: RegexNode): RegexNode {
    let min: number;
    let max: number;
    const c = this.peek();
    if (c === "*") [min, max] = [0, Infinity];
    else if (c === "+") [min, max] = [1, Infinity];
    else if (c === "?") [min, max] = [0, 1];
    else if (c === "{") {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.pos));
      if (!match) return atom; // a literal brace (Annex B), already consumed as an atom next time round
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === "" ? Infinity : Number(match[3]);
      this.pos += match[0].length - 1;
    } else return atom;
    this.pos++;
    if (this.peek() === "?") this.pos++; // lazy: same search space
    return { kind: "repeat", min, max, body: atom };
  }

  private parseAtom(): RegexNode {
    const c = this.next();
    switch (c) {
      case "(":
        return this.parseGroup();
      case "[":
        return this.char(this.parseClass());
      case ".":
        return { kind: "char", set: this.dotAll ? ANY_CHAR : complement(LINE_TERMINATOR) };
      case "^":
      case "$":
        return { kind: "assertion" };
      case "\\":
        return this.parseEscape();
      default:
        return this.char(single(this.codePointOf(c)));
    }
  }

  private parseGroup(): RegexNode {
    let zeroWidth = false;
    if (this.src.startsWith("?:", this.pos)) this.pos += 2;
    else if (this.src.startsWith("?=", this.pos) || this.src.startsWith("?!", this.pos)) {
      this.pos += 2;
      zeroWidth = true;
    } else if (this.src.startsWith("?<=", this.pos) || this.src.startsWith("?<!", this.pos)) {
      this.pos += 3;
      zeroWidth = true;
    } else if (this.src.startsWith("?<", this.pos)) {
      const close = this.src.indexOf(">", this.pos);
      if (close < 0) throw new RegexParseError("unterminated group name");
      this.pos = close + 1;
    } else if (this.peek() === "?") throw new RegexParseError(`unsupported group at ${this.pos}`);
    const alternatives = this.parseAlternatives();
    if (this.next() !== ")") throw new RegexParseError("unterminated group");
    return { kind: "group", alternatives, zeroWidth };
  }

  private parseEscape(): RegexNode {
    const c = this.next();
    if (c === "b" || c === "B") return { kind: "assertion" };
    if (/[1-9]/.test(c)) {
      while (/[0-9]/.test(this.peek())) this.pos++;
      return { kind: "backreference" };
    }
    if (c === "k" && this.peek() === "<") {
      const close = this.src.indexOf(">", this.pos);
      if (close < 0) throw new RegexParseError("unterminated \\k<name>");
      this.pos = close + 1;
      return { kind: "backreference" };
    }
    return this.char(this.escapedSet(c, false));
  }

  /** The set of one escape's character(s), outside or inside a class (`\b` is a backspace inside one). */
  private escapedSet(c: string, inClass: boolean): CharSet {
    switch (c) {
      case "d":
        return DIGIT;
      case "D":
        return complement(DIGIT);
      case "w":
        return WORD;
      case "W":
        return complement(WORD);
      case "s":
        return SPACE;
      case "S":
        return complement(SPACE);
      case "t":
        return single(0x09);
      case "n":
        return single(0x0a);
      case "v":
        return single(0x0b);
      case "f":
        return single(0x0c);
      case "r":
        return single(0x0d);
      case "0":
        // Without the u flag `\01` is one legacy octal character, not NUL and a digit: not followed, so refused.
        if (/[0-9]/.test(this.peek())) throw new RegexParseError("legacy octal escapes (\\0 followed by a digit) are not supported; use \\xHH");
        return single(0);
      case "b":
        return inClass ? single(0x08) : single(0x62);
      case "p":
      case "P":
        if (this.peek() === "{") {
          // Unicode property classes are not modelled: assume they can match anything.
          const close = this.src.indexOf("}", this.pos);
          if (close < 0) throw new RegexParseError("unterminated \\p{...}");
          this.pos = close + 1;
          return ANY_CHAR;
        }
        return single(this.codePointOf(c));
      case "x": {
        const hex = /^[0-9a-fA-F]{2}/.exec(this.src.slice(this.pos));
        if (!hex) return single(0x78);
        this.pos += 2;
        return single(parseInt(hex[0], 16));
      }
      case "u": {
        const braced = /^\{([0-9a-fA-F]+)\}/.exec(this.src.slice(this.pos));
        if (braced && this.unicode) {
          this.pos += braced[0].length;
          return single(parseInt(braced[1]!, 16));
        }
        const hex = /^[0-9a-fA-F]{4}/.exec(this.src.slice(this.pos));
        if (!hex) return single(0x75);
        this.pos += 4;
        return single(parseInt(hex[0], 16));
      }
      case "c":
        // `\cX` is a control character; a bare `\c` is read as a backslash and c. Either way: any, to stay safe.
        if (/[a-zA-Z]/.test(this.peek())) this.pos++;
        return ANY_CHAR;
      default:
        if (c === "") throw new RegexParseError("pattern ends in a backslash");
        // In a class `[\1]` is a legacy octal character (outside one, a backreference, refused by the safety check).
        if (inClass && /[1-9]/.test(c)) throw new RegexParseError("legacy octal escapes (\\1 to \\9 in a class) are not supported; use \\xHH");
        return single(this.codePointOf(c));
    }
  }

  private parseClass(): CharSet {
    const negated = this.peek() === "^";
    if (negated) this.pos++;
    let set: CharSet = EMPTY_SET;
    while (this.peek() !== "]") {
      if (this.pos >= this.src.length) throw new RegexParseError("unterminated character class");
      const low = this.classAtom();
      if (this.peek() === "-" && this.src[this.pos + 1] !== "]" && this.pos + 1 < this.src.length) {
        const save = this.pos;
        this.pos++;
        const high = this.classAtom();
        const lowPoint = soleCodePoint(low);
        const highPoint = soleCodePoint(high);
        if (lowPoint !== undefined && highPoint !== undefined) {
          set = union(set, range(lowPoint, highPoint));
          continue;
        }
        // `[\d-x]`: with a class escape on either side the hyphen is a literal (Annex B).
        this.pos = save;
      }
      set = union(set, low);
    }
    this.pos++;
    return negated ? complement(set) : set;
  }

  private classAtom(): CharSet {
    const c = this.next();
    if (c === "\\") return this.escapedSet(this.next(), true);
    return single(this.codePointOf(c));
  }

  private char(set: CharSet): RegexNode {
    return { kind: "char", set: this.ignoreCase ? foldCase(set) : set };
  }

  /** With `u` a surrogate pair is one character; without, each half is. */
  private codePointOf(first: string): number {
    const code = first.charCodeAt(0);
    if (this.unicode && code >= 0xd800 && code <= 0xdbff && this.pos < this.src.length) {
      const low = this.src.charCodeAt(this.pos);
      if (low >= 0xdc00 && low <= 0xdfff) {
        this.pos++;
        return (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
      }
    }
    return code;
  }

  private peek(): string {
    return this.src[this.pos] ?? "";
  }

  private next(): string {
    const c = this.src[this.pos] ?? "";
    this.pos++;
    return c;
  }
}

function soleCodePoint(set: CharSet): number | undefined {
  const only = set.length === 1 ? set[0] : undefined;
  return only && only[0] === only[1] ? only[0] : undefined;
}

/**
 * Sets of UTF-16 code units / code points as sorted, disjoint, inclusive ranges. Only the regex safety check uses
 * them, to ask "can these two parts of a pattern match the same character?".
 */
export type CharSet = readonly (readonly [number, number])[];

const MAX_CODE_POINT = 0x10ffff;

export const EMPTY_SET: CharSet = [];
const NON_ASCII: CharSet = [[0x80, MAX_CODE_POINT]];
export const ANY_CHAR: CharSet = [[0, MAX_CODE_POINT]];
export const DIGIT: CharSet = [[0x30, 0x39]];
export const WORD: CharSet = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
export const SPACE: CharSet = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
export const LINE_TERMINATOR: CharSet = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];

export function single(codePoint: number): CharSet {
  return [[codePoint, codePoint]];
}

export function range(low: number, high: number): CharSet {
  return low <= high ? [[low, high]] : EMPTY_SET;
}

export function union(a: CharSet, b: CharSet): CharSet {
  return normalize([...a, ...b]);
}

export function complement(set: CharSet): CharSet {
  const result: [number, number][] = [];
  let next = 0;
  for (const [low, high] of set) {
    if (low > next) result.push([next, low - 1]);
    next = high + 1;
  }
  if (next <= MAX_CODE_POINT) result.push([next, MAX_CODE_POINT]);
  return result;
}

export function intersects(a: CharSet, b: CharSet): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const [aLow, aHigh] = a[i]!;
    const [bLow, bHigh] = b[j]!;
    if (aLow <= bHigh && bLow <= aHigh) return true;
    if (aHigh < bHigh) i++;
    else j++;
  }
  return false;
}

export function isEmpty(set: CharSet): boolean {
  return set.length === 0;
}

/**
 * Widens a set for the `i` flag. ASCII letters gain their other case. Case folding outside ASCII is not modelled
 * exactly, so a set holding any non-ASCII character is taken to overlap every letter and every non-ASCII character
 * (with `u`, the Kelvin sign matches k and the long s matches s).
 */
export function foldCase(set: CharSet): CharSet {
  const extra: [number, number][] = [];
  for (const [low, high] of set) {
    const upperLow = Math.max(low, 0x41);
    const upperHigh = Math.min(high, 0x5a);
    if (upperLow <= upperHigh) extra.push([upperLow + 0x20, upperHigh + 0x20]);
    const lowerLow = Math.max(low, 0x61);
    const lowerHigh = Math.min(high, 0x7a);
    if (lowerLow <= lowerHigh) extra.push([lowerLow - 0x20, lowerHigh - 0x20]);
  }
  if (intersects(set, NON_ASCII)) extra.push([0x41, 0x5a], [0x61, 0x7a], [0x80, MAX_CODE_POINT]);
  return extra.length === 0 ? set : union(set, extra);
}

function normalize(ranges: readonly (readonly [number, number])[]): CharSet {
  const sorted = [...ranges].sort((x, y) => x[0] - y[0]);
  const result: [number, number][] = [];
  for (const [low, high] of sorted) {
    const last = result[result.length - 1];
    if (last && low <= last[1] + 1) last[1] = Math.max(last[1], high);
    else result.push([low, high]);
  }
  return result;
}

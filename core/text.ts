/** Length in Unicode code points: the "characters" of the spec's limits (an emoji is one, not two). */
export function charCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

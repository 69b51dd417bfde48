/** JSON Lines: one JSON object per line; blank lines are skipped; CRLF or LF; a leading BOM is dropped. */

export type JsonLine =
  { line: number; ok: true; value: Record<string, unknown> } | { line: number; ok: false; code: "INVALID_JSON" | "NOT_AN_OBJECT"; message: string };

export function parseJsonLines(input: string): JsonLine[] {
  const text = input.startsWith("\uFEFF") ? input.slice(1) : input;
  const result: JsonLine[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      result.push({ line, ok: false, code: "INVALID_JSON", message: `line ${line} is not valid JSON: ${(error as Error).message}` });
      return;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      result.push({ line, ok: false, code: "NOT_AN_OBJECT", message: `line ${line} must be a JSON object` });
      return;
    }
    result.push({ line, ok: true, value: value as Record<string, unknown> });
  });
  return result;
}

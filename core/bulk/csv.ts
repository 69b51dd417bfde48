/**
 * CSV as RFC 4180 describes it, read and written: comma separator, fields optionally double-quoted, a quoted
 * field may hold commas and line breaks, an inner quote is doubled. Read: CRLF, LF or a lone CR end a record, a
 * leading BOM is dropped, a quote inside an unquoted field is kept as text. Written: LF line ends, quoting only
 * fields that hold a comma, quote or line break.
 */

export interface CsvRecord {
  /** 1-based line of the file where the record starts (a quoted line break makes a record span lines). */
  line: number;
  fields: string[];
}

export type CsvParse =
  { ok: true; records: CsvRecord[] } | { ok: false; line: number; code: "CSV_UNTERMINATED_QUOTE" | "CSV_BAD_QUOTE"; message: string };

export function parseCsv(input: string): CsvParse {
  const text = input.startsWith("\uFEFF") ? input.slice(1) : input;
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let line = 1;
  let recordLine = 1;
  let i = 0;
  while (i <= text.length) {
    let field: string;
    if (text[i] === '"') {
      const quoteLine = line;
      let value = "";
      let from = i + 1;
      for (;;) {
        const close = text.indexOf('"', from);
        if (close < 0) {
          return { ok: false, line: quoteLine, code: "CSV_UNTERMINATED_QUOTE", message: `quoted field opened on line ${quoteLine} is never closed` };
        }
        value += text.slice(from, close);
        line += countLineBreaks(text, from, close);
        if (text[close + 1] === '"') {
          value += '"';
          from = close + 2;
          continue;
        }
        i = close + 1;
        break;
      }
      if (i < text.length && !isSeparatorOrBreak(text[i]!)) {
        return { ok: false, line, code: "CSV_BAD_QUOTE", message: `line ${line}: text after the closing quote of a field` };
      }
      field = value;
    } else {
      let end = i;
      while (end < text.length && !isSeparatorOrBreak(text[end]!)) end++;
      field = text.slice(i, end);
      i = end;
    }
    fields.push(field);
    if (text[i] === ",") {
      i++;
      continue;
    }
    // End of record: a line break or the end of the text.
    const atEnd = i >= text.length;
    if (!(atEnd && fields.length === 1 && fields[0] === "" && text[i - 1] !== '"')) {
      records.push({ line: recordLine, fields });
    }
    if (atEnd) break;
    i += text[i] === "\r" && text[i + 1] === "\n" ? 2 : 1;
    line++;
    recordLine = line;
    fields = [];
  }
  return { ok: true, records };
}

function isSeparatorOrBreak(c: string): boolean {
  return c === "," || c === "\n" || c === "\r";
}

/** Line breaks (CRLF, LF or lone CR) in text[from, to). */
function countLineBreaks(text: string, from: number, to: number): number {
  let count = 0;
  for (let k = from; k < to; k++) {
    const c = text[k];
    if (c === "\n" || (c === "\r" && text[k + 1] !== "\n")) count++;
  }
  return count;
}

export type CsvCell = string | number | bigint | boolean | null | undefined;

/** A CSV text with a header row; `null` and `undefined` cells are empty. Every row must be as wide as the header. */
export function writeCsv(header: readonly string[], rows: readonly (readonly CsvCell[])[]): string {
  const lines = [header, ...rows].map((row, index) => {
    if (row.length !== header.length) {
      throw new RangeError(`row ${index} has ${row.length} cells; the header has ${header.length}`);
    }
    return row.map(formatCell).join(",");
  });
  return `${lines.join("\n")}\n`;
}

function formatCell(cell: CsvCell): string {
  const text = cell === null || cell === undefined ? "" : String(cell);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

import { expect } from "chai";
import { parseCsv, writeCsv } from "@market/core/bulk";

describe("core/bulk: CSV", () => {
  const table: [string, string, { line: number; fields: string[] }[]][] = [
    ["empty text", "", []],
    ["header only, no final newline", "a,b", [{ line: 1, fields: ["a", "b"] }]],
    [
      "LF",
      "a,b\n1,2\n",
      [
        { line: 1, fields: ["a", "b"] },
        { line: 2, fields: ["1", "2"] },
      ],
    ],
    [
      "CRLF",
      "a,b\r\n1,2\r\n",
      [
        { line: 1, fields: ["a", "b"] },
        { line: 2, fields: ["1", "2"] },
      ],
    ],
    [
      "lone CR",
      "a,b\r1,2",
      [
        { line: 1, fields: ["a", "b"] },
        { line: 2, fields: ["1", "2"] },
      ],
    ],
    ["BOM dropped", "\uFEFFa,b\n", [{ line: 1, fields: ["a", "b"] }]],
    [
      "empty fields",
      "a,,\n,,\n",
      [
        { line: 1, fields: ["a", "", ""] },
        { line: 2, fields: ["", "", ""] },
      ],
    ],
    ["quoted comma", 'x,"1,5",y\n', [{ line: 1, fields: ["x", "1,5", "y"] }]],
    ["doubled quote", '"say ""hi""",b\n', [{ line: 1, fields: ['say "hi"', "b"] }]],
    ["empty quoted field", '"",b\n', [{ line: 1, fields: ["", "b"] }]],
    ["quoted empty last field, no newline", 'a,""', [{ line: 1, fields: ["a", ""] }]],
    ["only a quoted empty field", '""', [{ line: 1, fields: [""] }]],
    [
      "quoted line breaks move the line count",
      'h\n"one\ntwo\r\nthree"\nnext\n',
      [
        { line: 1, fields: ["h"] },
        { line: 2, fields: ["one\ntwo\r\nthree"] },
        { line: 5, fields: ["next"] },
      ],
    ],
    [
      "blank line kept as an empty record",
      "a\n\nb\n",
      [
        { line: 1, fields: ["a"] },
        { line: 2, fields: [""] },
        { line: 3, fields: ["b"] },
      ],
    ],
    ["quote inside an unquoted field is text", 'a 5" disk,b\n', [{ line: 1, fields: ['a 5" disk', "b"] }]],
    ["spaces kept", " a , b \n", [{ line: 1, fields: [" a ", " b "] }]],
  ];
  for (const [name, text, records] of table) {
    it(`parses ${name}`, () => {
      expect(parseCsv(text)).to.deep.equal({ ok: true, records });
    });
  }

  const errors: [string, string, string, number][] = [
    ["unterminated quote", 'a,b\n1,"open\n2,3\n', "CSV_UNTERMINATED_QUOTE", 2],
    ["unterminated quote on the first line", '"a', "CSV_UNTERMINATED_QUOTE", 1],
    ["text after a closing quote", 'a,b\n"x"y,2\n', "CSV_BAD_QUOTE", 2],
    ["text after a multi-line quoted field", 'a\n"x\ny" z\n', "CSV_BAD_QUOTE", 3],
  ];
  for (const [name, text, code, line] of errors) {
    it(`refuses ${name} with ${code} on line ${line}`, () => {
      expect(parseCsv(text)).to.deep.include({ ok: false, code, line });
    });
  }

  describe("writeCsv", () => {
    it("quotes only what needs it and doubles inner quotes", () => {
      const text = writeCsv(
        ["line", "status", "error"],
        [
          [2, "posted", ""],
          [3, "failed, nothing paid", 'amount "x" is bad'],
          [4n, "not started", "line one\nline two"],
          [5, null, undefined],
        ],
      );
      expect(text).to.equal(
        'line,status,error\n2,posted,\n3,"failed, nothing paid","amount ""x"" is bad"\n4,not started,"line one\nline two"\n5,,\n',
      );
    });

    it("round-trips through parseCsv", () => {
      const header = ["a", "b", "c"];
      const rows = [
        ['quote " and, comma', "\r\nbreaks\r", ""],
        ["plain", " spaced ", "ünï😀"],
      ];
      const parsed = parseCsv(writeCsv(header, rows));
      expect(parsed).to.deep.equal({
        ok: true,
        records: [
          { line: 1, fields: header },
          { line: 2, fields: rows[0] },
          { line: 5, fields: rows[1] },
        ],
      });
    });

    it("refuses a row narrower than the header", () => {
      expect(() => writeCsv(["a", "b"], [["1"]])).to.throw(RangeError);
    });
  });
});

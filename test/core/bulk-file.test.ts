import { expect } from "chai";
import {
  BulkFileIssue,
  bulkFormatOf,
  BulkRowIssue,
  parseBulkFile,
  type BulkFileOptions,
  type BulkFileResult,
  type RowIssue,
} from "@market/core/bulk";
import { AmountIssue } from "@market/core/money";
import { TaskFieldIssue } from "@market/core/task-fields";

const TARGET = "0x52908400098527886E0F7030069857D2E4169EE7";
const csv: BulkFileOptions = { format: "csv" };
const jsonl: BulkFileOptions = { format: "jsonl" };

function rowsOf(result: BulkFileResult) {
  if (!result.readable) expect.fail(`file refused: ${result.issue.code} ${result.issue.message}`);
  return result;
}

function issuesOf(result: BulkFileResult): Pick<RowIssue, "line" | "column" | "code">[] {
  return rowsOf(result).errors.map(({ line, column, code }) => ({ line, column, code }));
}

describe("core/bulk: task files", () => {
  it("reads a CSV row with every default applied", () => {
    const result = rowsOf(parseBulkFile("instructions,reward\nSummarise the report,2.5\n", csv));
    expect(result.errors).to.deep.equal([]);
    expect(result.rows).to.deep.equal([
      {
        line: 2,
        instructions: "Summarise the report",
        amount: 2_500_000n,
        durationSeconds: 86_400,
        privacy: "private",
        verification: "auto",
        zone: "global",
        capabilities: [],
      },
    ]);
  });

  it("reads every column, ignoring the case of column names and values", () => {
    const text =
      "Instructions,AMOUNT,Duration,Privacy,Verification,Zone,Routing_Summary,Capabilities,Target\n" +
      `"Translate, please",1500000,3600,PUBLIC,Manual,eu-west,French translation,translation; Summarization,${TARGET.toLowerCase()}\n`;
    const result = rowsOf(parseBulkFile(text, csv));
    expect(result.errors).to.deep.equal([]);
    expect(result.rows).to.deep.equal([
      {
        line: 2,
        instructions: "Translate, please",
        amount: 1_500_000n,
        durationSeconds: 3_600,
        privacy: "public",
        verification: "manual",
        zone: "eu-west",
        routingSummary: "French translation",
        capabilities: ["translation", "summarization"],
        target: TARGET,
      },
    ]);
  });

  it("gives each row the line where it starts, across quoted line breaks and blank lines", () => {
    const text = 'instructions,reward\n"line one\nline two",1\n\n,,\nthird,2\n';
    const result = rowsOf(parseBulkFile(text, csv));
    expect(result.rows.map((row) => [row.line, row.instructions])).to.deep.equal([
      [2, "line one\nline two"],
      [6, "third"],
    ]);
  });

  it("reads JSON Lines with JSON numbers, tag lists and blank lines", () => {
    const text = [
      JSON.stringify({ instructions: "a", reward: 2.5, duration: 7200, capabilities: ["testing", "code_review"] }),
      "",
      JSON.stringify({ Instructions: "b", amount: "7", privacy: "public", routing_summary: null }),
      JSON.stringify({ instructions: "c", amount: 9, capabilities: "testing;scheduling" }),
    ].join("\r\n");
    const result = rowsOf(parseBulkFile(text, jsonl));
    expect(result.errors).to.deep.equal([]);
    expect(result.rows.map((row) => [row.line, row.amount, row.durationSeconds, row.privacy, row.capabilities])).to.deep.equal([
      [1, 2_500_000n, 7_200, "private", ["testing", "code_review"]],
      [3, 7n, 86_400, "public", []],
      [4, 9n, 86_400, "private", ["testing", "scheduling"]],
    ]);
  });

  describe("row errors (file still readable)", () => {
    const header = "instructions,reward,amount,duration,privacy,verification,zone,routing_summary,capabilities,target";
    const table: [string, string, { column?: string; code: string }[]][] = [
      ["no instructions", ",1,,,,,,,,", [{ column: "instructions", code: BulkRowIssue.INSTRUCTIONS_REQUIRED }]],
      ["blank instructions", "  ,1,,,,,,,,", [{ column: "instructions", code: BulkRowIssue.INSTRUCTIONS_REQUIRED }]],
      ["neither reward nor amount", "brief,,,,,,,,,", [{ column: "reward", code: BulkRowIssue.REWARD_REQUIRED }]],
      ["both reward and amount", "brief,1,1000000,,,,,,,", [{ column: "amount", code: BulkRowIssue.REWARD_AND_AMOUNT }]],
      ["reward with 7 decimals", "brief,1.0000001,,,,,,,,", [{ column: "reward", code: AmountIssue.TOO_MANY_DECIMALS }]],
      ["reward zero", "brief,0,,,,,,,,", [{ column: "reward", code: AmountIssue.NOT_POSITIVE }]],
      ["reward with a currency sign", "brief,$2,,,,,,,,", [{ column: "reward", code: AmountIssue.NOT_DECIMAL }]],
      ["amount with decimals", "brief,,2.5,,,,,,,", [{ column: "amount", code: AmountIssue.NOT_WHOLE_NUMBER }]],
      ["amount above 2^256-1", `brief,,${2n ** 256n},,,,,,,`, [{ column: "amount", code: AmountIssue.TOO_LARGE }]],
      ["duration too short", "brief,1,,3599,,,,,,", [{ column: "duration", code: TaskFieldIssue.DURATION_OUT_OF_RANGE }]],
      ["duration too long", "brief,1,,7776001,,,,,,", [{ column: "duration", code: TaskFieldIssue.DURATION_OUT_OF_RANGE }]],
      ["duration in words", "brief,1,,1 day,,,,,,", [{ column: "duration", code: TaskFieldIssue.DURATION_NOT_INTEGER }]],
      ["unknown privacy", "brief,1,,,secret,,,,,", [{ column: "privacy", code: TaskFieldIssue.INVALID_PRIVACY }]],
      ["agent verification", "brief,1,,,,agent,,,,", [{ column: "verification", code: BulkRowIssue.INVALID_VERIFICATION }]],
      ["zone too long", `brief,1,,,,,${"z".repeat(129)},,,`, [{ column: "zone", code: TaskFieldIssue.ZONE_TOO_LONG }]],
      [
        "routing summary too long",
        `brief,1,,,,,,${"s".repeat(501)},,`,
        [{ column: "routing_summary", code: TaskFieldIssue.ROUTING_SUMMARY_TOO_LONG }],
      ],
      ["malformed capability", "brief,1,,,,,,,translation;two words,", [{ column: "capabilities", code: BulkRowIssue.INVALID_CAPABILITY }]],
      [
        "comma-separated tags outside the CLI",
        'brief,1,,,,,,,"translation,testing",',
        [{ column: "capabilities", code: BulkRowIssue.INVALID_CAPABILITY }],
      ],
      ["bad target", "brief,1,,,,,,,,0x1234", [{ column: "target", code: TaskFieldIssue.INVALID_ADDRESS }]],
      ["bad target checksum", `brief,1,,,,,,,,${TARGET.slice(0, -1)}e`, [{ column: "target", code: TaskFieldIssue.INVALID_ADDRESS }]],
      ["too few cells", "brief,1", [{ code: BulkFileIssue.FIELD_COUNT }]],
      [
        "several bad cells in one row",
        ",0,,60,,,,,,nobody",
        [
          { column: "instructions", code: BulkRowIssue.INSTRUCTIONS_REQUIRED },
          { column: "reward", code: AmountIssue.NOT_POSITIVE },
          { column: "duration", code: TaskFieldIssue.DURATION_OUT_OF_RANGE },
          { column: "target", code: TaskFieldIssue.INVALID_ADDRESS },
        ],
      ],
    ];
    for (const [name, row, expected] of table) {
      it(`${name}: ${expected.map((issue) => issue.code).join(", ")}`, () => {
        const result = parseBulkFile(`${header}\ngood,1,,,,,,,,\n${row}\n`, csv);
        expect(rowsOf(result).rows.map((r) => r.line)).to.deep.equal([2]);
        expect(issuesOf(result)).to.deep.equal(expected.map((issue) => ({ line: 3, column: issue.column, code: issue.code })));
        for (const issue of rowsOf(result).errors) expect(issue.message).to.be.a("string").and.not.equal("");
      });
    }

    it("accepts the largest raw amount and the duration bounds", () => {
      const result = rowsOf(parseBulkFile(`${header}\na,,${2n ** 256n - 1n},3600,,,,,,\nb,,1,7776000,,,,,,\n`, csv));
      expect(result.errors).to.deep.equal([]);
      expect(result.rows.map((row) => [row.amount, row.durationSeconds])).to.deep.equal([
        [2n ** 256n - 1n, 3_600],
        [1n, 7_776_000],
      ]);
    });

    it("accepts comma-separated tags in the CLI", () => {
      const result = rowsOf(parseBulkFile(`${header}\nbrief,1,,,,,,,"translation, testing",\n`, { ...csv, allowCommaInCapabilities: true }));
      expect(result.rows[0]?.capabilities).to.deep.equal(["translation", "testing"]);
    });

    it("limits web briefs to a character count when asked", () => {
      const text = `instructions,reward\n${"x".repeat(20_001)},1\n${"x".repeat(20_000)},1\n`;
      const result = parseBulkFile(text, { ...csv, maxInstructionsChars: 20_000 });
      expect(issuesOf(result)).to.deep.equal([{ line: 2, column: "instructions", code: BulkRowIssue.INSTRUCTIONS_TOO_LONG }]);
    });

    it("refuses a brief that cannot fit one 10 MB upload once encrypted", () => {
      const brief = "x".repeat(10 * 1024 * 1024 - 27);
      const result = parseBulkFile(`instructions,reward\n${brief},1\n`, csv);
      expect(issuesOf(result)).to.deep.equal([{ line: 2, column: "instructions", code: BulkRowIssue.INSTRUCTIONS_TOO_LONG }]);
    });

    it("refuses JSON values of the wrong type", () => {
      const text = [
        JSON.stringify({ instructions: 5, reward: 1 }),
        JSON.stringify({ instructions: "a", amount: 2.5 }),
        JSON.stringify({ instructions: "a", reward: true }),
        JSON.stringify({ instructions: "a", reward: 1, capabilities: [1] }),
        JSON.stringify({ instructions: "a", reward: 1, duration: "3600", zone: 7 }),
        "[1,2]",
        "{not json",
      ].join("\n");
      expect(issuesOf(parseBulkFile(text, jsonl))).to.deep.equal([
        { line: 1, column: "instructions", code: BulkRowIssue.INVALID_VALUE },
        { line: 2, column: "amount", code: BulkRowIssue.INVALID_VALUE },
        { line: 3, column: "reward", code: BulkRowIssue.INVALID_VALUE },
        { line: 4, column: "capabilities", code: BulkRowIssue.INVALID_VALUE },
        { line: 5, column: "zone", code: BulkRowIssue.INVALID_VALUE },
        { line: 6, column: undefined, code: BulkFileIssue.NOT_AN_OBJECT },
        { line: 7, column: undefined, code: BulkFileIssue.INVALID_JSON },
      ]);
    });
  });

  describe("duplicate briefs", () => {
    it("refuses the same public brief twice with DUPLICATE_BRIEF on the later row", () => {
      const text = "instructions,reward,privacy\nSame brief,1,public\nOther,1,public\nSame brief,2,public\n";
      const result = parseBulkFile(text, csv);
      expect(issuesOf(result)).to.deep.equal([{ line: 4, column: "instructions", code: BulkRowIssue.DUPLICATE_BRIEF }]);
      expect(rowsOf(result).errors[0]?.message).to.match(/line 2/);
      expect(rowsOf(result).rows.map((row) => row.line)).to.deep.equal([2, 3]);
    });

    it("allows the same private brief twice, and a public and a private copy", () => {
      const text = "instructions,reward,privacy\nSame,1,private\nSame,1,\nSame,1,public\n";
      const result = rowsOf(parseBulkFile(text, csv));
      expect(result.errors).to.deep.equal([]);
      expect(result.rows).to.have.length(3);
    });

    it("compares public briefs exactly, as their hashes do", () => {
      const result = rowsOf(parseBulkFile("instructions,reward,privacy\nSame,1,public\nsame,1,public\n", csv));
      expect(result.errors).to.deep.equal([]);
    });
  });

  describe("instructions_file (CLI)", () => {
    const files: Record<string, string> = { "briefs/one.md": "Brief from a file", "empty.md": "  \n" };
    const readFile = (path: string) => {
      const content = files[path];
      if (content === undefined) throw new Error("ENOENT: no such file");
      return content;
    };

    it("reads the brief through the injected readFile", () => {
      const result = rowsOf(parseBulkFile("instructions_file,reward\n briefs/one.md ,1\n", { ...csv, readFile }));
      expect(result.rows[0]?.instructions).to.equal("Brief from a file");
    });

    it("refuses a missing file, an empty file and a row with both columns", () => {
      const text = "instructions,instructions_file,reward\n,missing.md,1\n,empty.md,1\ninline,briefs/one.md,1\n,,1\n";
      expect(issuesOf(parseBulkFile(text, { ...csv, readFile }))).to.deep.equal([
        { line: 2, column: "instructions_file", code: BulkRowIssue.INSTRUCTIONS_FILE_UNREADABLE },
        { line: 3, column: "instructions_file", code: BulkRowIssue.INSTRUCTIONS_REQUIRED },
        { line: 4, column: "instructions_file", code: BulkRowIssue.INSTRUCTIONS_CONFLICT },
        { line: 5, column: "instructions", code: BulkRowIssue.INSTRUCTIONS_REQUIRED },
      ]);
    });

    it("is an unknown column without readFile", () => {
      expect(parseBulkFile("instructions_file,reward\nbriefs/one.md,1\n", csv)).to.deep.include({
        readable: false,
        issue: {
          line: 1,
          column: "instructions_file",
          code: BulkFileIssue.BAD_COLUMNS,
          message: 'unknown column "instructions_file" (instructions_file is read by the CLI only)',
        },
      });
    });
  });

  describe("files refused whole", () => {
    const table: [string, string, BulkFileOptions, { line: number; column?: string; code: string }][] = [
      ["an unknown CSV column", "instructions,reward,colour\na,1,red\n", csv, { line: 1, column: "colour", code: BulkFileIssue.BAD_COLUMNS }],
      ["a repeated column", "instructions,Reward,reward\na,1,1\n", csv, { line: 1, column: "reward", code: BulkFileIssue.BAD_COLUMNS }],
      ["a nameless column", "instructions,,reward\na,,1\n", csv, { line: 1, column: "", code: BulkFileIssue.BAD_COLUMNS }],
      [
        "an unknown JSON key",
        '{"instructions":"a","reward":1}\n{"instructions":"b","reward":1,"tip":2}\n',
        jsonl,
        { line: 2, column: "tip", code: BulkFileIssue.BAD_COLUMNS },
      ],
      [
        "a JSON key repeated in another case",
        '{"reward":1,"Reward":2,"instructions":"a"}\n',
        jsonl,
        { line: 1, column: "Reward", code: BulkFileIssue.BAD_COLUMNS },
      ],
      ["an unterminated quote", 'instructions,reward\n"a,1\nb,2\n', csv, { line: 2, code: BulkFileIssue.CSV_UNTERMINATED_QUOTE }],
      ["text after a closing quote", 'instructions,reward\n"a"b,1\n', csv, { line: 2, code: BulkFileIssue.CSV_BAD_QUOTE }],
      ["an empty CSV", "", csv, { line: 1, code: BulkFileIssue.EMPTY_FILE }],
      ["an empty JSONL", "\n \n", jsonl, { line: 1, code: BulkFileIssue.EMPTY_FILE }],
      ["a header without rows", "instructions,reward\n\n", csv, { line: 1, code: BulkFileIssue.NO_ROWS }],
      [
        "more rows than the MCP limit",
        `instructions,amount\n${"a,1\n".repeat(201)}`,
        { ...csv, maxRows: 200 },
        { line: 202, code: BulkFileIssue.TOO_MANY_ROWS },
      ],
      ["more than 1,000 rows", `instructions,amount\n${"a,1\n".repeat(1_001)}`, csv, { line: 1_002, code: BulkFileIssue.TOO_MANY_ROWS }],
    ];
    for (const [name, text, options, expected] of table) {
      it(`${name}: ${expected.code}`, () => {
        const result = parseBulkFile(text, options);
        expect(result.readable).to.equal(false);
        if (!result.readable) {
          const { line, column, code } = result.issue;
          expect({ line, column, code }).to.deep.equal({ column: undefined, ...expected });
          expect(result.issue.message).to.not.equal("");
        }
      });
    }

    it("accepts exactly the row limit", () => {
      expect(rowsOf(parseBulkFile(`instructions,amount\n${"a,1\n".repeat(1_000)}`, csv)).rows).to.have.length(1_000);
      expect(rowsOf(parseBulkFile(`instructions,amount\n${"a,1\n".repeat(200)}`, { ...csv, maxRows: 200 })).rows).to.have.length(200);
    });
  });

  it("tells the format from the file name", () => {
    expect([bulkFormatOf("tasks.CSV"), bulkFormatOf("t.jsonl"), bulkFormatOf("t.ndjson"), bulkFormatOf("t.json")]).to.deep.equal([
      "csv",
      "jsonl",
      "jsonl",
      undefined,
    ]);
  });
  describe("verification columns (auto rules, checked like the API's criteria)", () => {
    const header = "Instructions,Reward,Verification,VERIFICATION_MIN_LENGTH,verification_keywords,Verification_Regex,pass_threshold";

    it("reads the rules into the row's criteria; without them the bulk default applies", () => {
      const text = `${header}\nSummarise it,1,,40,revenue; margin ;,^Summary:,100\nShort,1,,,,,\nKeywords only,1,auto,,alpha,,\n`;
      const rows = rowsOf(parseBulkFile(text, csv)).rows;
      expect(rows.map((r) => r.criteria)).to.deep.equal([
        { min_length: 40, pass_threshold: 100, contains_keywords: ["revenue", "margin"], regex_pattern: "^Summary:" },
        undefined,
        { contains_keywords: ["alpha"] },
      ]);
    });

    it("reads JSON Lines numbers and keyword lists", () => {
      const line = JSON.stringify({
        instructions: "a",
        reward: 1,
        verification_min_length: 12,
        verification_keywords: ["x", "y"],
        pass_threshold: 50,
      });
      expect(rowsOf(parseBulkFile(line, jsonl)).rows[0]!.criteria).to.deep.equal({
        min_length: 12,
        pass_threshold: 50,
        contains_keywords: ["x", "y"],
      });
    });

    const refused: [string, string, { column: string; code: string }][] = [
      ["a length that is not a number", "b,1,,ten,,,", { column: "verification_min_length", code: BulkRowIssue.INVALID_VERIFICATION }],
      ["a length of zero", "b,1,,0,,,", { column: "verification_min_length", code: "CRITERIA_OUT_OF_RANGE" }],
      ["a threshold above 100", "b,1,,10,,,101", { column: "pass_threshold", code: "CRITERIA_OUT_OF_RANGE" }],
      ["a threshold without a rule", "b,1,,,,,80", { column: "verification", code: "CRITERIA_NO_RULE" }],
      ["a catastrophic regex", "b,1,,,,(a+)+$,", { column: "verification_regex", code: "CRITERIA_REGEX_UNSAFE" }],
      ["rules with manual verification", "b,1,manual,20,,,", { column: "verification", code: BulkRowIssue.INVALID_VERIFICATION }],
    ];
    for (const [name, row, expected] of refused) {
      it(`refuses ${name} (${expected.code})`, () => {
        const result = parseBulkFile(`${header}\n${row}\n`, csv);
        expect(rowsOf(result).rows).to.deep.equal([]);
        expect(issuesOf(result)).to.deep.equal([{ line: 2, ...expected }]);
      });
    }
  });
});

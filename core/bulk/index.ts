export { BULK_COLUMNS, type BulkColumn } from "./columns";
export { parseCsv, writeCsv, type CsvCell, type CsvParse, type CsvRecord } from "./csv";
export {
  BulkFileIssue,
  bulkFormatOf,
  checkBulkRows,
  parseBulkFile,
  type BulkFileOptions,
  type BulkFileResult,
  type BulkFormat,
  type FileIssue,
} from "./file";
export { parseJsonLines, type JsonLine } from "./jsonl";
export { BulkRowIssue, normalizeBulkRow, type BulkRow, type BulkRowOptions, type BulkVerification, type RowIssue, type RowValues } from "./rows";

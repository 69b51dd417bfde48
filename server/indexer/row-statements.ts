import { CompiledQuery, PostgresAdapter, type Compilable, type Kysely } from "kysely";
import type { Database } from "../db/schema";

/** Rows of the largest statement: 512 rows of 20 columns bind 10,240 values, under SQLite's 32,766 and PostgreSQL's 65,535. */
const MAX_ROWS = 512;
/** The row counts of the statements: 512, then the powers of two below it. */
const SIZES = Array.from({ length: Math.log2(MAX_ROWS) + 1 }, (_, i) => MAX_ROWS / 2 ** i);

/** Where each bound value of a compiled statement comes from: a row's column, or a constant of the query itself. */
type Slot = { row: number; column: string } | { value: unknown };

interface Template {
  sql: string;
  slots: readonly Slot[];
  /**
   * When the bound values are every row's columns row after row, in one column order, and nothing else (an INSERT's
   * VALUES list): that order, so that the values are read in two plain loops rather than slot by slot.
   */
  rowMajor: readonly string[] | null;
}

/**
 * On PostgreSQL, every row of a write goes in one parameter, as JSON, read back by the table's own row type
 * (`json_populate_recordset`): one statement of a few parameters instead of thousands, which PostgreSQL parses and
 * plans far faster than a VALUES list of 512 rows (and the client serializes one string instead of 10,240 values).
 * The rows are serialized with the column list as JSON.stringify's replacer (no copy of each row), so a row's values
 * must be flat (strings, numbers, booleans, null), as those of every row statement of the indexer are.
 */
const POSTGRES_ROWS = 5_000;
const ONE_ROW_INSERT = /^insert into ("[^"]+") \(([^)]*)\) values \((\$\d+(?:, \$\d+)*)\)/;

/**
 * Lets the event loop run between two statements. A SQLite statement runs synchronously and Kysely's driver answers
 * with resolved promises, so a whole transaction would otherwise run without the thread ever reading its sockets: the
 * node's answers to the ranges read ahead would wait until the commit, and so would the requests that follow them.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface RowStatement<Row> {
  /** Writes the rows (in statements of 512 rows, then of the powers of two that make up the rest). */
  (db: Kysely<Database>, rows: readonly Row[]): Promise<void>;
  /**
   * Compiles every statement of the database's dialect now, so that no write transaction holds its lock while Kysely
   * compiles (a few milliseconds each, more while the JIT is cold: the first transactions of a new worker thread).
   */
  prepare(db: Kysely<Database>): void;
}

/**
 * Every column of `Row`, listed: `everyColumn<T>()(["a", "b"])` does not compile when T has a column the list leaves out
 * (a column left out of a row statement would be written as its default, silently).
 */
export function everyColumn<Row>() {
  return <const Columns extends ReadonlyArray<keyof Row & string>>(
    columns: Columns & ([Exclude<keyof Row, Columns[number]>] extends [never] ? unknown : { missing: Exclude<keyof Row, Columns[number]> }),
  ): Columns => columns;
}

/**
 * A multi-row write (an INSERT, an upsert) of rows with `columns`, compiled by Kysely once per row count and then
 * bound to each batch's values. Building and compiling an INSERT visits every value, which on a catch-up cost about as
 * much as SQLite running the statement; the same few shapes repeat for every range. Rows go in statements of 512, then
 * of the powers of two that make up the rest, so ten statements are ever compiled (per dialect).
 *
 * `build` writes the statement for the given rows (placeholder values when compiling a template); the template records
 * which row and column each bound value comes from, so the order is the one Kysely compiled, whatever it is.
 */
export function rowStatement<Row extends object>(
  columns: ReadonlyArray<keyof Row & string>,
  build: (db: Kysely<Database>, rows: Row[]) => Compilable,
): RowStatement<Row> {
  // Per dialect (the database's adapter) and row count.
  const templates = new WeakMap<object, Map<number, Template>>();

  const templateFor = (db: Kysely<Database>, count: number): Template => {
    const adapter = db.getExecutor().adapter;
    let byCount = templates.get(adapter);
    if (!byCount) templates.set(adapter, (byCount = new Map()));
    let template = byCount.get(count);
    if (template) return template;
    template = count > 1 ? repeated(templateFor(db, 1), count) : undefined;
    if (template) {
      byCount.set(count, template);
      return template;
    }
    const markers = new Map<string, { row: number; column: string }>();
    const rows = Array.from({ length: count }, (_, row) => {
      const placeholder: Record<string, string> = {};
      for (const column of columns) {
        const marker = `\u0000${row}\u0000${column}`;
        markers.set(marker, { row, column });
        placeholder[column] = marker;
      }
      return placeholder as Row;
    });
    const compiled = build(db, rows).compile();
    const slots = compiled.parameters.map((value): Slot => (typeof value === "string" && markers.get(value)) || { value });
    template = { sql: compiled.sql, slots, rowMajor: rowMajorOrder(slots, count, columns.length) };
    byCount.set(count, template);
    return template;
  };

  /** The JSON form of the one-row statement (see POSTGRES_ROWS), or undefined when it has constants of its own. */
  const postgresTemplates = new WeakMap<object, string | null>();
  const postgresSql = (db: Kysely<Database>): string | undefined => {
    const adapter = db.getExecutor().adapter;
    if (!(adapter instanceof PostgresAdapter)) return undefined;
    let text = postgresTemplates.get(adapter);
    if (text === undefined) {
      const { sql, slots } = templateFor(db, 1);
      const match = ONE_ROW_INSERT.exec(sql);
      text =
        match && slots.every((slot) => "row" in slot)
          ? `insert into ${match[1]} (${match[2]}) select ${match[2]} from json_populate_recordset(null::${match[1]}, $1::json)${sql.slice(match[0].length)}`
          : null;
      postgresTemplates.set(adapter, text);
    }
    return text ?? undefined;
  };

  const run = async (db: Kysely<Database>, rows: readonly Row[]) => {
    const { sql, slots, rowMajor } = templateFor(db, rows.length);
    let parameters: unknown[];
    if (rowMajor) {
      parameters = new Array<unknown>(slots.length);
      let i = 0;
      for (const row of rows as ReadonlyArray<Record<string, unknown>>) for (const column of rowMajor) parameters[i++] = row[column];
    } else {
      parameters = slots.map((slot) => ("value" in slot ? slot.value : (rows[slot.row] as Record<string, unknown>)[slot.column]));
    }
    await db.executeQuery(CompiledQuery.raw(sql, parameters));
  };

  const columnList = [...columns];
  const write = async (db: Kysely<Database>, rows: readonly Row[]) => {
    const json = postgresSql(db);
    if (json) {
      for (let at = 0; at < rows.length; at += POSTGRES_ROWS) {
        if (at > 0) await turn();
        // The columns as the replacer: each row's values of `columns` alone, in that order, without a copy of the row
        // (a row may carry more properties than the statement writes; its values are flat).
        const slice = at === 0 && rows.length <= POSTGRES_ROWS ? rows : rows.slice(at, at + POSTGRES_ROWS);
        await db.executeQuery(CompiledQuery.raw(json, [JSON.stringify(slice, columnList)]));
      }
      return;
    }
    let at = 0;
    for (const size of SIZES) {
      while (rows.length - at >= size) {
        if (at > 0) await turn();
        await run(db, rows.slice(at, at + size));
        at += size;
        if (size < MAX_ROWS) break;
      }
    }
  };
  return Object.assign(write, {
    prepare(db: Kysely<Database>) {
      if (postgresSql(db)) return;
      for (const size of SIZES) templateFor(db, size);
    },
  });
}

/** A one-row INSERT with `?` placeholders whose bound values are its row's columns alone (SQLite's form). */
const ONE_ROW_TUPLE = /^(insert into "[^"]+" \([^)]*\) values )(\(\?(?:, \?)*\))/;

/**
 * The `count`-row template of a one-row INSERT, its VALUES tuple repeated: what Kysely would compile for `count` rows,
 * without building and compiling a statement of count × columns values (20 ms for 512 rows of 20 columns, ten sizes
 * per statement at every start of a worker thread). Undefined when the one-row template is not of that form.
 */
function repeated(one: Template, count: number): Template | undefined {
  const match = ONE_ROW_TUPLE.exec(one.sql);
  if (!match || !one.rowMajor || one.slots.length !== one.rowMajor.length || one.sql.includes("?", match[0].length)) return undefined;
  const tuples = new Array<string>(count).fill(match[2]!).join(", ");
  const slots: Slot[] = [];
  for (let row = 0; row < count; row++) for (const column of one.rowMajor) slots.push({ row, column });
  return { sql: `${match[1]}${tuples}${one.sql.slice(match[0].length)}`, slots, rowMajor: one.rowMajor };
}

/** The column order of a template whose slots are `count` rows of `width` columns each, row after row; else null. */
function rowMajorOrder(slots: readonly Slot[], count: number, width: number): string[] | null {
  if (slots.length !== count * width) return null;
  const order: string[] = [];
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[i]!;
    if (!("row" in slot) || slot.row !== Math.floor(i / width)) return null;
    if (i < width) order.push(slot.column);
    else if (slot.column !== order[i % width]) return null;
  }
  return order;
}

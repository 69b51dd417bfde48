import { CompiledQuery, type Compilable, type Transaction } from "kysely";
import type { Database } from "../db/schema";

/** Rows of the largest statement: 512 rows of 20 columns bind 10,240 values, under SQLite's 32,766 and PostgreSQL's 65,535. */
const MAX_ROWS = 512;

/** Where each bound value of a compiled statement comes from: a row's column, or a constant of the query itself. */
type Slot = { row: number; column: string } | { value: unknown };

interface Template {
  sql: string;
  slots: readonly Slot[];
}

/**
 * A multi-row write (an INSERT, an upsert) of rows of one shape, compiled by Kysely once per row count and then bound
 * to each batch's values. Building and compiling an INSERT visits every value, which on a catch-up cost about as much
 * as SQLite running the statement; the same few shapes repeat for every range. Rows go in statements of 512, then of
 * the powers of two that make up the rest, so at most ten statements of each shape are ever compiled (per dialect).
 * Every row of one rowStatement has the same columns (a row type's whole set, values null rather than absent).
 *
 * `build` writes the statement for the given rows (placeholder values when compiling the template); the template
 * records which row and column each bound value comes from, so the order is the one Kysely compiled, whatever it is.
 */
export function rowStatement<Row extends object>(
  build: (trx: Transaction<Database>, rows: Row[]) => Compilable,
): (trx: Transaction<Database>, rows: readonly Row[]) => Promise<void> {
  // Per dialect (the database's adapter) and row count; rows of one statement have one shape.
  const templates = new WeakMap<object, Map<number, Template>>();

  const templateFor = (trx: Transaction<Database>, shape: Row, count: number): Template => {
    const adapter = trx.getExecutor().adapter;
    let byCount = templates.get(adapter);
    if (!byCount) templates.set(adapter, (byCount = new Map()));
    let template = byCount.get(count);
    if (template) return template;
    const columns = Object.keys(shape);
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
    const compiled = build(trx, rows).compile();
    const slots = compiled.parameters.map((value): Slot => (typeof value === "string" && markers.get(value)) || { value });
    template = { sql: compiled.sql, slots };
    byCount.set(count, template);
    return template;
  };

  const run = async (trx: Transaction<Database>, rows: readonly Row[]) => {
    const { sql, slots } = templateFor(trx, rows[0]!, rows.length);
    const parameters = slots.map((slot) => ("value" in slot ? slot.value : (rows[slot.row] as Record<string, unknown>)[slot.column]));
    await trx.executeQuery(CompiledQuery.raw(sql, parameters));
  };

  return async (trx, rows) => {
    let at = 0;
    while (rows.length - at >= MAX_ROWS) {
      await run(trx, rows.slice(at, at + MAX_ROWS));
      at += MAX_ROWS;
    }
    for (let size = MAX_ROWS / 2; size >= 1; size /= 2) {
      if (rows.length - at >= size) {
        await run(trx, rows.slice(at, at + size));
        at += size;
      }
    }
  };
}

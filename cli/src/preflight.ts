/**
 * Checks a `post-tasks` run makes before its summary, so the dry run and the summary count only what can be posted
 * (issue 29, items 3 and 13): public rows whose task hash is listed already (by anyone: a copied file, another poster)
 * can only fail with TASK_HASH_IN_USE; a private row no registered agent can open is refused NO_EXECUTORS, as the real
 * run refuses it. Small and separate, to move with the posting engine into the SDK.
 */
import { MarketClient } from "../../sdk/src/client";
import { ApiError } from "../../sdk/src/errors";
import { findRecipients, type CheckedRow, type WrapTo } from "../../sdk/src/posting";
import { publicTaskHash } from "../../core/crypto";
import type { FileRow } from "./task-file";

/** Reads at a time while looking hashes up. */
const LOOKUPS_AT_ONCE = 8;

/** The fresh public rows whose task hash the service lists already: posting them can only fail with TASK_HASH_IN_USE. */
export async function listedAlready(client: MarketClient, rows: readonly FileRow[]): Promise<FileRow[]> {
  const publicRows = rows.filter((r) => r.row.privacy === "public");
  const listed: FileRow[] = [];
  for (let i = 0; i < publicRows.length; i += LOOKUPS_AT_ONCE) {
    const batch = publicRows.slice(i, i + LOOKUPS_AT_ONCE);
    const found = await Promise.all(
      batch.map((r) =>
        client.getTask(publicTaskHash(r.row.instructions)).then(
          () => true,
          (error: unknown) => {
            if (error instanceof ApiError && error.code === "TASK_NOT_FOUND") return false;
            throw error;
          },
        ),
      ),
    );
    batch.forEach((r, j) => found[j] && listed.push(r));
  }
  return listed;
}

/** Refuses, as the real run would before sending, private rows no registered agent on the chain can open (NO_EXECUTORS). */
export async function requireRecipients(client: MarketClient, chain: string, rows: readonly FileRow[], wrapTo?: WrapTo) {
  const checked = rows.map((r, index) => ({ index, row: r.row, verificationMode: "auto" as const }) satisfies CheckedRow);
  try {
    await findRecipients({ http: client.http, settlement: await client.settlement(chain) }, checked, wrapTo);
  } catch (error) {
    // Named by file line, as the real run names them.
    if (error instanceof ApiError) for (const e of error.body.errors ?? []) e.line = rows[e.index]!.line;
    throw error;
  }
}

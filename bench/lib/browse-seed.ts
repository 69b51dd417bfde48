/**
 * The tasks bench/browse.ts browses: open, listed public tasks written straight into the tables in SQL
 * (generate_series, PostgreSQL), as bench/api.ts seeds SQLite.
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import type { Db } from "../../server/db";
import { CAPABILITY_TAGS } from "@market/core/capabilities";
import { EscrowStatus, Ending } from "@market/core/escrow";

export const SEED_TOKEN = "0x3600000000000000000000000000000000000000";
const POSTERS = 50;
/** Poster `i` (0-based) of the 50 that list the seeded tasks; poster 0 is the agent the pinned tasks are pinned to. */
export const seedPoster = (i: number) => `0x${(i + 1).toString(16).padStart(40, "0")}`;
/** Rows per INSERT ... SELECT. */
const CHUNK = 100_000;

/** Seed task i: requires two tags when i % 3 = 0, pinned to seedPoster(0) when i % 100 = 50. */
export const seedTags = (i: number): string[] =>
  i % 3 === 0 ? [CAPABILITY_TAGS[i % CAPABILITY_TAGS.length]!, CAPABILITY_TAGS[(i + 7) % CAPABILITY_TAGS.length]!] : [];
export const seedPinned = (i: number) => i % 100 === 50;

/** Seeds `tasks` tasks (task i listed i seconds after task 0, the newest last); calls `progress` after each chunk. */
export async function seedBrowseTasks(db: Db, tasks: number, nowMs: number, progress?: (done: number) => void): Promise<void> {
  for (let from = 0; from < tasks; from += CHUNK) {
    const to = Math.min(tasks, from + CHUNK);
    await seedChunk(db, tasks, from, to, nowMs);
    progress?.(to);
  }
}

/**
 * Seeds rows `from` to `to - 1` in SQL (generate_series), as bench/api.ts does on SQLite: task hash = SHA-256 of the
 * brief, task i listed i seconds after task 0 (the newest last), a third requiring two tags, 1% pinned to poster 1.
 */
async function seedChunk(db: Db, tasks: number, from: number, to: number, nowMs: number) {
  const tags = [...CAPABILITY_TAGS];
  const deadline = Math.floor(nowMs / 1000) + 30 * 86_400;
  // Row i of the seed: its brief, task hash and poster.
  const rows = sql`(select i, brief, '0x' || encode(sha256(convert_to(brief, 'UTF8')), 'hex') as task_hash,
      '0x' || lpad(to_hex(i % ${POSTERS} + 1), 40, '0') as poster, (1000000 + (i % 1000) * 1000)::text as amount,
      '0x' || lpad(to_hex(i + 1), 64, '0') as funding_tx
    from (select i, 'Task ' || i || ': summarise the attached quarterly report in five bullet points, citing page numbers, and flag any figure that changed by more than ten percent against the previous quarter. Keep it under two hundred words.' as brief
          from generate_series(${from}::int, ${to - 1}::int) as i) as s) as r`;
  const tag = (shift: number) => sql`(${tags}::text[])[(i + ${shift}) % ${tags.length} + 1]`;
  await sql`
    insert into listings (task_hash, chain, poster, privacy, public_brief, routing_summary, root_hash, verification_mode,
      verification_criteria, required_capabilities, location_zone, target_executor, target_executor_type, service_id,
      verifier_address, key_custody_blob, token, funding_tx, listed_at)
    select task_hash, 'arc', poster, 'public', brief, null, null, 'auto', '{"min_length":50,"contains_keywords":["quarter"],"pass_threshold":60}',
      case when i % 3 = 0 then '["' || ${tag(0)} || '","' || ${tag(7)} || '"]' else '[]' end,
      'global', case when i % 100 = 50 then ${seedPoster(0)} end, case when i % 100 = 50 then 'agent' end, null, null, null,
      ${SEED_TOKEN}, funding_tx, ${nowMs}::bigint - (${tasks}::bigint - i) * 1000
    from ${rows}
  `.execute(db);
  await sql`
    insert into listing_capabilities (task_hash, tag)
    select task_hash, ${tag(0)} from ${rows} where i % 3 = 0
    union all
    select task_hash, ${tag(7)} from ${rows} where i % 3 = 0
  `.execute(db);
  await sql`
    insert into escrow_tasks (chain, task_hash, poster, token, amount, verifier, worker, assigned_by, deadline, status, rounds, ending,
      result_hash, phase_at, last_score, payout, fee, created_block, created_tx, updated_block)
    select 'arc', task_hash, poster, ${SEED_TOKEN}, amount, null, null, null, ${deadline}, ${EscrowStatus.Funded}, 0, ${Ending.None},
      null, null, null, null, null, 1 + i / 20, funding_tx, 1 + i / 20
    from ${rows}
  `.execute(db);
}

/**
 * Lists one more open public task (seed number `i`, beyond the seeded ones), newest of all at `nowMs`: its listing and
 * its escrow task in one transaction, as a funding indexed and listed at once would write them.
 */
export async function seedListedTask(db: Db, i: number, nowMs: number): Promise<void> {
  const brief = `Task ${i}: a task listed while the bench browses.`;
  const taskHash = `0x${createHash("sha256").update(brief).digest("hex")}`;
  const poster = seedPoster(i % POSTERS);
  const fundingTx = `0x${(i + 1).toString(16).padStart(64, "0")}`;
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("listings")
      .values({
        task_hash: taskHash,
        chain: "arc",
        poster,
        privacy: "public",
        public_brief: brief,
        routing_summary: null,
        root_hash: null,
        verification_mode: "auto",
        verification_criteria: '{"min_length":50,"contains_keywords":["quarter"],"pass_threshold":60}',
        required_capabilities: "[]",
        location_zone: "global",
        target_executor: null,
        target_executor_type: null,
        service_id: null,
        verifier_address: null,
        key_custody_blob: null,
        token: SEED_TOKEN,
        funding_tx: fundingTx,
        listed_at: nowMs,
      })
      .execute();
    await trx
      .insertInto("escrow_tasks")
      .values({
        chain: "arc",
        task_hash: taskHash,
        poster,
        token: SEED_TOKEN,
        amount: "1000000",
        verifier: null,
        worker: null,
        assigned_by: null,
        deadline: Math.floor(nowMs / 1000) + 30 * 86_400,
        status: EscrowStatus.Funded,
        rounds: 0,
        ending: Ending.None,
        result_hash: null,
        phase_at: null,
        last_score: null,
        payout: null,
        fee: null,
        created_block: 1 + Math.floor(i / 20),
        created_tx: fundingTx,
        updated_block: 1 + Math.floor(i / 20),
      })
      .execute();
  });
}

// Lifecycle job: the inbox rows (CMINMSGS, C-1). Index of the jobs: tasks.ts.
import { sql } from 'kysely';
import type mysql from 'mysql2/promise';
import { LOCKS } from '../db/postgres.ts';
import { INBOX_TABLE } from '../db/mysql.ts';
import { withTimeout } from '../core/timeout.ts';
import { batches, before, count, TERMINAL, type JobOptions, type RetentionDeps } from './common.ts';

/**
 * Delete inbox rows whose PROC_STATE row is terminal with BACKFILL_AT set and older than R_keep.
 * Abandoned backfills (no BACKFILL_AT) are never candidates; a read-only instance never touches the
 * inbox. By primary key, and only rows that carry a processing time (the mark backfill wrote).
 * The lifecycle gate is held from reading the evidence until the delete is done, so a replay (which
 * clears BACKFILL_AT under the same gate) never interleaves.
 */
export async function purgeInbox(d: RetentionDeps, o: JobOptions = {}): Promise<number> {
  if (d.config['msgx.inbox.read-only']) return 0;
  const cutoff = before(d, 'msgx.pipeline.inbox-retention');
  const io = d.config['msgx.io.timeout'];
  // Every inbox ID below the smallest present one is gone already: start there.
  const [minRows] = await withTimeout(io, 'inbox min id', d.inbox.query<mysql.RowDataPacket[]>(`SELECT MIN(CMINMSGS_ID) AS m FROM ${INBOX_TABLE}`));
  if (minRows[0]?.m === null || minRows[0]?.m === undefined) return 0;
  let after = Number(minRows[0].m) - 1;
  const n = await batches(o, 1000, (batch) =>
    d.db.transaction().execute(async (tx) => {
      await sql`select pg_advisory_xact_lock(${LOCKS.LIFECYCLE_GATE})`.execute(tx);
      const c = await sql<{ msg_id: number }>`
        select msg_id from proc_state
        where msg_id > ${after} and state = any(${TERMINAL}::text[]) and backfill_at is not null and backfill_at < ${cutoff}
        order by msg_id limit ${batch}`.execute(tx);
      const ids = c.rows.map((r) => Number(r.msg_id));
      if (ids.length === 0) return [0, 0] as [number, number];
      after = ids[ids.length - 1];
      const [res] = await withTimeout(
        io,
        'inbox retention delete',
        d.inbox.query<mysql.ResultSetHeader>(`DELETE FROM ${INBOX_TABLE} WHERE CMINMSGS_ID IN (?) AND CMINMSGS_DATE_PROCESSED IS NOT NULL`, [ids]),
      );
      count('cminmsgs', res.affectedRows);
      return [res.affectedRows, ids.length] as [number, number];
    }),
  );
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: inbox rows deleted (C-1)');
  return n;
}

// ---------------------------------------------------------------------------------------------
// PROC_STATE (US-11, G-PROC-CLEANUP)

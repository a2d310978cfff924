// Lifecycle job: the inbox rows (CMINMSGS, C-1). Index of the jobs: tasks.ts.
import { LOCKS } from '../db/postgres.ts';
import * as Inbox from '../sql/inbox.ts';
import * as Locks from '../sql/locks.ts';
import * as ProcState from '../sql/proc-state.ts';
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
  if (d.retention.readOnly) return 0;
  const cutoff = before(d, 'inboxRetentionMs');
  const io = d.retention.timeoutMs;
  // Every inbox ID below the smallest present one is gone already: start there.
  const minRows = await withTimeout(io, 'inbox min id', Inbox.readMinId(d.inbox));
  if (minRows[0]?.m === null || minRows[0]?.m === undefined) return 0;
  let after = Number(minRows[0].m) - 1;
  const n = await batches(o, 1000, (batch) =>
    d.db.transaction().execute(async (tx) => {
      await Locks.xactLock(tx, LOCKS.LIFECYCLE_GATE);
      const c = await ProcState.listInboxPurgeCandidates(tx, after, TERMINAL, cutoff, batch);
      const ids = c.map((r) => Number(r.msg_id));
      if (ids.length === 0) return [0, 0] as [number, number];
      after = ids[ids.length - 1];
      const res = await withTimeout(io, 'inbox retention delete', Inbox.deleteProcessed(d.inbox, ids));
      count('cminmsgs', res.affectedRows);
      return [res.affectedRows, ids.length] as [number, number];
    }),
  );
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: inbox rows deleted (C-1)');
  return n;
}

// ---------------------------------------------------------------------------------------------
// PROC_STATE

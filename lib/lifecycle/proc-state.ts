// Lifecycle job: PROC_STATE rows. Index of the jobs: tasks.ts.
import * as InboxSql from '../sql/inbox.ts';
import * as ProcState from '../sql/proc-state.ts';
import { withTimeout } from '../core/timeout.ts';
import { batches, before, count, TERMINAL, type JobOptions, type RetentionDeps } from './common.ts';

/**
 * Delete terminal PROC_STATE rows older than msgx.proc-state.retention (UPDATED_AT) whose inbox row
 * is already gone (the row is C-1's evidence). With BACKFILL_AT set; on a read-only instance
 * (which never backfills) the inbox row must be gone or carry a processing time instead — a row
 * still unprocessed in the inbox would be enqueued again by intake's full scan. The DELETE repeats
 * every condition on STATE, so a row a replay has just reset is skipped (0 rows), never lost.
 */
export async function purgeProcState(d: RetentionDeps, o: JobOptions = {}): Promise<number> {
  const cutoff = before(d, 'procStateRetentionMs');
  const readOnly = d.retention.readOnly;
  const io = d.retention.timeoutMs;
  let after = 0;
  const n = await batches(o, 1000, async (batch) => {
    const candidates = await ProcState.listPurgeCandidates(d.db, after, TERMINAL, cutoff, readOnly, batch);
    const ids = candidates.map((r) => r.msg_id);
    if (ids.length === 0) return [0, 0];
    after = ids[ids.length - 1];
    // Evidence from the inbox: a failure here throws and nothing is deleted.
    const rows = await withTimeout(io, 'inbox presence check', InboxSql.readRetentionPresence(d.inbox, ids));
    const keep = new Set(rows.filter((r) => !readOnly || r.p === null).map((r) => Number(r.id)));
    const gone = ids.filter((id) => !keep.has(id));
    if (gone.length === 0) return [0, ids.length];
    const deleted = await ProcState.purge(d.db, gone, TERMINAL, cutoff, readOnly);
    count('proc_state', deleted);
    return [deleted, ids.length];
  });
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString(), readOnly }, 'retention: PROC_STATE rows deleted');
  return n;
}

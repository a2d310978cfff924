// Operator actions on the pipeline, shared by the CLI scripts, the HTTP routes and the
// graphile-worker tasks: replay (lifecycle gate against backfill) and backfill-resume.
import { sql } from 'kysely';
import type { Clock } from '../clock.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import { replay, resumeBackfill, wake } from './transitions.ts';

export interface ReplayRequest {
  ids?: number[];
  state?: 'FAILED' | 'DEAD';
  reason?: string;
  force?: boolean;
}

export async function replayMessages(db: Db, clock: Clock, req: ReplayRequest): Promise<number[]> {
  if (!req.ids?.length && !req.state) throw new Error('replay needs message ids or --state');
  return db.transaction().execute(async (tx) => {
    await sql`select pg_advisory_xact_lock(${LOCKS.LIFECYCLE_GATE})`.execute(tx);
    const ids = await replay(tx, { ids: req.ids, state: req.state, reasonPrefix: req.reason, force: req.force }, clock.now());
    if (ids.length) await wake(tx, 'pump');
    return ids;
  });
}

export async function resumeBackfills(db: Db, clock: Clock, req: { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' }): Promise<number[]> {
  if (!req.ids?.length && !req.reason) throw new Error('backfill-resume needs message ids or --reason');
  return db.transaction().execute(async (tx) => {
    const ids = await resumeBackfill(tx, req, clock.now());
    if (ids.length) await wake(tx, 'backfill');
    return ids;
  });
}

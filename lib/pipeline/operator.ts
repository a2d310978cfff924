// Operator actions on the pipeline, shared by the CLI scripts, the HTTP routes and the
// graphile-worker tasks: replay (lifecycle gate against backfill) and backfill-resume.
// Each action reports what its selection matched but left untouched, and why, so that an
// operator is never answered "0" without a reason.
import { TASK } from '../core/tasks.ts';
import type { Clock } from '../core/clock.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import { pgRows, pgRun } from '../db/statement.ts';
import * as Locks from '../sql/locks.ts';
import * as ProcState from '../sql/proc-state.ts';
import { reasonLabel } from '../runtime/metrics.ts';
import { replay, resumeBackfill, wake } from './transitions.ts';

export interface ReplayRequest {
  ids?: number[];
  state?: 'FAILED' | 'DEAD';
  reason?: string;
  force?: boolean;
}

export interface ActionReport {
  /** Message ids acted on. */
  done: number[];
  /** One line per matched-but-untouched id (id selection) or per reason (state/reason selection). */
  untouched: string[];
  /** True when the request named ids (each one was asked for). */
  byIds: boolean;
}

/** An empty id list means "no id selection" (the CLIs always pass their positional list). */
const idsOf = (ids?: number[]) => (ids && ids.length ? ids : undefined);

/** Why replay leaves a message in this state/reason (null: it is replayable). */
function replayRefusal(state: string, reason: string | null, force: boolean): string | null {
  if (state === 'FAILED') return null;
  if (state !== 'DEAD') return `${state}, not FAILED or DEAD`;
  const label = reasonLabel(reason);
  if (label === 'EXHAUSTED') return null;
  if (label === 'MALFORMED' || label === 'PROTOCOL') return force ? null : `DEAD(${label}) needs --force`;
  return `DEAD(${label || 'no reason'}) is not replayable`;
}

/** Lines for the untouched: per id when ids were named, else counted per reason. */
function describe(byIds: boolean, missing: number[], refused: { id: number; why: string }[], matched: number, verb: string): string[] {
  if (byIds) return [...missing.map((id) => `${id}: no such message`), ...refused.map((r) => `${r.id}: ${r.why}`)];
  if (matched === 0) return ['no message matches the selection'];
  const byWhy = new Map<string, number[]>();
  for (const r of refused) byWhy.set(r.why, [...(byWhy.get(r.why) ?? []), r.id]);
  return [...byWhy].map(([why, ids]) => `${ids.length} message(s) not ${verb}: ${why} (${ids.slice(0, 20).join(' ')}${ids.length > 20 ? ' …' : ''})`);
}

export async function replayReport(db: Db, clock: Clock, req: ReplayRequest): Promise<ActionReport> {
  const ids = idsOf(req.ids);
  if (!ids && !req.state) throw new Error('replay needs message ids or --state');
  return db.transaction().execute(async (tx) => {
    await pgRun(tx, Locks.xactLock, LOCKS.LIFECYCLE_GATE);
    const matched = await pgRows(tx, ProcState.replaySelection, ids ?? null, req.state || null, req.reason ? `${req.reason}%` : null);
    const done = await replay(tx, { ids, state: req.state, reasonPrefix: req.reason, force: req.force }, clock.now());
    if (done.length) await wake(tx, TASK.pump);
    const doneSet = new Set(done);
    const refused = matched.filter((m) => !doneSet.has(m.msg_id)).map((m) => ({ id: m.msg_id, why: replayRefusal(m.state, m.reason, !!req.force) ?? `${m.state} changed meanwhile` }));
    const found = new Set(matched.map((m) => m.msg_id));
    const missing = ids ? ids.filter((id) => !found.has(id) && !doneSet.has(id)) : [];
    return { done, untouched: describe(!!ids, missing, refused, matched.length, 'replayed'), byIds: !!ids };
  });
}

export async function replayMessages(db: Db, clock: Clock, req: ReplayRequest): Promise<number[]> {
  return (await replayReport(db, clock, req)).done;
}

export async function resumeReport(db: Db, clock: Clock, req: { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' }): Promise<ActionReport> {
  const ids = idsOf(req.ids);
  if (!ids && !req.reason) throw new Error('backfill-resume needs message ids or --reason');
  return db.transaction().execute(async (tx) => {
    const matched = await pgRows(tx, ProcState.resumeSelection, ids ?? null, req.reason || null);
    const done = await resumeBackfill(tx, { ids, reason: req.reason }, clock.now());
    if (done.length) await wake(tx, TASK.backfill);
    const doneSet = new Set(done);
    const refused = matched
      .filter((m) => !doneSet.has(m.msg_id))
      .map((m) => ({ id: m.msg_id, why: m.backfill_abandoned_at ? `backfill abandoned as ${m.backfill_abandoned_reason}` : 'backfill not abandoned' }));
    const found = new Set(matched.map((m) => m.msg_id));
    const missing = ids ? ids.filter((id) => !found.has(id)) : [];
    return { done, untouched: describe(!!ids, missing, refused, matched.length, 'resumed'), byIds: !!ids };
  });
}

export async function resumeBackfills(db: Db, clock: Clock, req: { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' }): Promise<number[]> {
  return (await resumeReport(db, clock, req)).done;
}

/**
 * The CLI's verdict: success only when something was done and, for an id selection, every
 * named id was done (a state/reason selection may leave explained others behind).
 */
export const reportOk = (r: ActionReport) => r.done.length > 0 && !(r.byIds && r.untouched.length > 0);

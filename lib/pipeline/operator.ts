// Operator actions on the pipeline, shared by the CLI scripts, the HTTP routes and the
// graphile-worker tasks: replay (lifecycle gate against backfill) and backfill-resume.
// Each action reports what its selection matched but left untouched, and why, so that an
// operator is never answered "0" without a reason.
import { TASK } from '../core/tasks.ts';
import type { Clock } from '../core/clock.ts';
import type { ReasonClass } from '../core/errors.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import * as Locks from '../sql/locks.ts';
import * as ProcState from '../sql/proc-state.ts';
import { reasonLabel } from '../runtime/metrics.ts';
import { wake } from '../sql/jobs.ts';
import { replay, resumeBackfill } from '../sql/transitions.ts';
import type { Inbox } from '../db/mysql.ts';
import { withTimeout } from '../core/timeout.ts';
import { needsForce, neverApplied } from './failures.ts';
import { existingInboxIds } from './inbox.ts';

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

/** Why replay leaves a message in this state (null: it is replayable): the whitelist of ProcState.replay, on the reason's class; the reason's label names it. */
function replayRefusal(m: { state: string; reason: string | null; reason_class: ReasonClass | null }, force: boolean): string | null {
  if (m.state === 'FAILED') return null;
  if (m.state !== 'DEAD') return `${m.state}, not FAILED or DEAD`;
  const label = reasonLabel(m.reason);
  if (m.reason_class === 'EXHAUSTED') return null;
  if (needsForce(m)) return force ? null : `DEAD(${label}) needs --force`;
  return `DEAD(${label || 'no reason'}) is not replayable`;
}

/** Lines for the untouched: per id when ids were named, else counted per reason. */
function describe(byIds: boolean, missing: number[], refused: { id: number; why: string }[], matched: number, verb: string): string[] {
  if (byIds) return [...missing.map((id) => `${id}: no such message`), ...refused.map((r) => `${r.id}: ${r.why.replace('<ids>', String(r.id))}`)];
  if (matched === 0) return ['no message matches the selection'];
  const byWhy = new Map<string, number[]>();
  for (const r of refused) byWhy.set(r.why, [...(byWhy.get(r.why) ?? []), r.id]);
  const list = (ids: number[]) => `${ids.slice(0, 20).join(' ')}${ids.length > 20 ? ' …' : ''}`;
  return [...byWhy].map(([why, ids]) => `${ids.length} message(s) not ${verb}: ${why.replace('<ids>', list(ids))} (${list(ids)})`);
}

/** The inbox look-up of a forced replay (optional: without it never-read messages are not checked). */
export interface InboxCheck {
  inbox: Inbox;
  timeoutMs: number;
}

const RAW_STILL_MISSING = 'never read (MALFORMED: raw-missing) and its inbox row is still missing: replaying it would only make it DEAD again; replay it when the row is back';

/**
 * replay, checked first: with force and an inbox to ask, a never-read (raw-missing) message whose
 * row is still missing is left (replaying it would only make it DEAD again and re-fire the alerts).
 */
export async function replayReport(db: Db, clock: Clock, req: ReplayRequest, check?: InboxCheck): Promise<ActionReport> {
  const ids = idsOf(req.ids);
  if (!ids && !req.state) throw new Error('give message ids or a state (FAILED or DEAD)');
  const reasonLike = req.reason ? `${req.reason}%` : null;
  let held = new Set<number>();
  if (req.force && check) {
    const raw = (await ProcState.selectReplay(db, ids ?? null, req.state || null, reasonLike)).filter(neverApplied).map((m) => m.msg_id);
    if (raw.length) {
      let present: Set<number>;
      try {
        present = await withTimeout(check.timeoutMs, 'inbox look-up', existingInboxIds(check.inbox, raw));
      } catch (e) {
        throw new InboxUnavailable(`cannot check the inbox rows of never-read messages (${(e as Error).message}): nothing replayed`);
      }
      held = new Set(raw.filter((id) => !present.has(id)));
    }
  }
  return db.transaction().execute(async (tx) => {
    await Locks.xactLock(tx, LOCKS.LIFECYCLE_GATE);
    const matched = await ProcState.selectReplay(tx, ids ?? null, req.state || null, reasonLike);
    // Leaving some out turns the selection into the ids that are left (an empty one replays nothing).
    const selected = held.size ? matched.map((m) => m.msg_id).filter((id) => !held.has(id)) : ids;
    const done = selected && selected.length === 0 ? [] : await replay(tx, { ids: selected, state: req.state, reasonPrefix: req.reason, force: req.force }, clock.now());
    if (done.length) await wake(tx, TASK.pump);
    const doneSet = new Set(done);
    const refused = matched
      .filter((m) => !doneSet.has(m.msg_id))
      .map((m) => ({ id: m.msg_id, why: held.has(m.msg_id) ? RAW_STILL_MISSING : (replayRefusal(m, !!req.force) ?? `${m.state} changed meanwhile`) }));
    const found = new Set(matched.map((m) => m.msg_id));
    const missing = ids ? ids.filter((id) => !found.has(id) && !doneSet.has(id)) : [];
    return { done, untouched: describe(!!ids, missing, refused, matched.length, 'replayed'), byIds: !!ids };
  });
}

export async function replayMessages(db: Db, clock: Clock, req: ReplayRequest, check?: InboxCheck): Promise<number[]> {
  return (await replayReport(db, clock, req, check)).done;
}

/** What backfill-resume needs: Postgres, and the inbox to check that the rows are there. */
export interface ResumeDeps {
  db: Db;
  inbox: Inbox;
  clock: Clock;
  /** Deadline of the inbox look-up (msgx.io.timeout). */
  timeoutMs: number;
}

export type ResumeRequest = { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' };

/** The inbox could not be asked whether the rows are there: nothing was resumed. */
export class InboxUnavailable extends Error {}

const NEVER_APPLIED =
  'never applied: DEAD(MALFORMED: raw-missing), its inbox row was gone when the pump read it; marking it processed would tell the AODB it was applied. Not resumed. When the row is back, apply it: npm run replay -- <ids> --force';
const ROW_STILL_MISSING = 'inbox row still missing: not resumed (backfill would abandon it again at once); resume it when the row is back';

/**
 * backfill-resume, checked first: a message that was never applied is refused (with the command
 * that recovers it), and one whose inbox row is still missing is left abandoned (resuming it
 * would only abandon it again and re-fire the alert). The inbox is asked before Postgres is
 * changed; when it cannot be asked nothing is resumed (InboxUnavailable).
 */
export async function resumeReport(d: ResumeDeps, req: ResumeRequest): Promise<ActionReport> {
  const ids = idsOf(req.ids);
  if (!ids && !req.reason) throw new Error('give message ids or a reason (MISSING_ROW or TRANSIENT_DEADLINE)');
  const matched = await ProcState.selectResume(d.db, ids ?? null, req.reason || null);
  const refused: { id: number; why: string }[] = [];
  const abandoned: number[] = [];
  for (const m of matched) {
    if (!m.backfill_abandoned_at) refused.push({ id: m.msg_id, why: 'backfill not abandoned' });
    else if (neverApplied(m)) refused.push({ id: m.msg_id, why: NEVER_APPLIED });
    else abandoned.push(m.msg_id);
  }
  let present = new Set<number>();
  if (abandoned.length) {
    try {
      present = await withTimeout(d.timeoutMs, 'inbox look-up', existingInboxIds(d.inbox, abandoned));
    } catch (e) {
      throw new InboxUnavailable(`cannot check the inbox rows (${(e as Error).message}): nothing resumed`);
    }
  }
  for (const id of abandoned) if (!present.has(id)) refused.push({ id, why: ROW_STILL_MISSING });
  const resumable = abandoned.filter((id) => present.has(id));
  const done = resumable.length
    ? await d.db.transaction().execute(async (tx) => {
        const r = await resumeBackfill(tx, { ids: resumable, reason: req.reason }, d.clock.now());
        if (r.length) await wake(tx, TASK.backfill);
        return r;
      })
    : [];
  const doneSet = new Set(done);
  for (const id of resumable) if (!doneSet.has(id)) refused.push({ id, why: 'changed meanwhile (no longer abandoned)' });
  refused.sort((a, b) => a.id - b.id);
  const found = new Set(matched.map((m) => m.msg_id));
  const missing = ids ? ids.filter((id) => !found.has(id)) : [];
  return { done, untouched: describe(!!ids, missing, refused, matched.length, 'resumed'), byIds: !!ids };
}

export async function resumeBackfills(d: ResumeDeps, req: ResumeRequest): Promise<number[]> {
  return (await resumeReport(d, req)).done;
}

/**
 * The CLI's verdict: success only when something was done and, for an id selection, every
 * named id was done (a state/reason selection may leave explained others behind).
 */
export const reportOk = (r: ActionReport) => r.done.length > 0 && !(r.byIds && r.untouched.length > 0);

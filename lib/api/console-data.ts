// The reads behind console v2, all from Postgres (the console works without Prometheus):
//   - counts per state and reason class, each one a filter of the paged list (DEAD is never
//     hidden behind SKIPPED: every group is its own list);
//   - the paged list of one state (and reason class), newest first, cursor = msg_id;
//   - the last hour per minute: backlog, messages terminal per minute by outcome, inbox ->
//     terminal latency, dispatch pending.
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/postgres.ts';
import * as ConsoleSql from '../sql/console.ts';
import { iso } from '../flight/timeline.ts';
import { needsForce } from '../pipeline/failures.ts';

export const PROC_STATES = ['PENDING', 'FAILED', 'SUCCEEDED', 'SKIPPED', 'DEAD'] as const;
export type ProcStateName = (typeof PROC_STATES)[number];

/**
 * Messages per state and reason class. The reason class of a PROC_STATE reason: the text before
 * the first ':' (e.g. "EXHAUSTED(INTERNAL)", "PROTOCOL"), at most 60 characters; '' = no reason
 * (REASON_CLASS in lib/sql/console.ts).
 */
export async function stateCounts(db: Db) {
  const rows = await ConsoleSql.countByReason(db);
  const states = PROC_STATES.map((state) => {
    const groups = rows.filter((x) => x.state === state);
    return { state, count: groups.reduce((a, g) => a + g.n, 0), reasons: groups.map((g) => ({ reason: g.reason, count: g.n })) };
  });
  return { states };
}

export interface ListQuery {
  state: ProcStateName;
  /** Reason class (see stateCounts); undefined = every reason. */
  reason?: string;
  /** Cursor: only messages with a smaller msg_id. */
  before?: number;
  limit: number;
}

export async function listMessages(db: Db, q: ListQuery, tz: string) {
  const page = await ConsoleSql.listPage(db, q.state, q.reason ?? null, q.before ?? null, q.limit + 1);
  const rows = page.slice(0, q.limit);
  return {
    state: q.state,
    reason: q.reason ?? null,
    messages: rows.map((m) => ({
      msgId: Number(m.msg_id),
      state: m.state as string,
      kind: (m.kind as string | null) ?? null,
      reason: (m.reason as string | null) ?? null,
      /** DEAD of a class that replay takes only with force (the console asks before). */
      needsForce: needsForce(m),
      attempts: Number(m.attempts),
      enqueuedAt: iso(m.enqueued_at, tz),
      terminalAt: iso(m.terminal_at, tz),
      backfill: m.backfill_at ? 'WRITTEN' : m.backfill_abandoned_reason ? `ABANDONED(${m.backfill_abandoned_reason})` : null,
    })),
    /** Pass as `before` for the next page; null = last page. */
    nextBefore: page.length > q.limit ? Number(rows[rows.length - 1].msg_id) : null,
  };
}

const MINUTES = 60;

/** Buckets of the last hour: minute i covers [start + i min, start + (i+1) min); the last one ends at now. */
function minuteIndex(at: Date, start: number): number {
  return Math.floor((at.getTime() - start) / 60_000);
}

export interface ProcTimes {
  state: string;
  enqueued_at: Date;
  terminal_at: Date | null;
  /** The inbox's received time as an instant (null: unknown). */
  received: Date | null;
}
export interface EventTimes {
  state: string;
  created_at: Date;
  sent_at: Date | null;
}

/**
 * The last hour per minute, pure: `procs` = PROC_STATE rows open now or touched in the hour,
 * `events` = outbox rows PENDING now or sent in the hour. Minute i covers [start + i min,
 * start + (i+1) min), the last one contains now. Backlog and dispatch pending are the values at
 * each minute's end, counted back from now (open now, minus those that arrived after, plus those
 * that left after); outcomes and latency are per minute of the terminal time.
 */
export function hourSeries(procs: readonly ProcTimes[], events: readonly EventTimes[], now: Date) {
  const end = Math.floor(now.getTime() / 60_000) * 60_000 + 60_000;
  const start = end - MINUTES * 60_000;
  const zeros = () => new Array<number>(MINUTES).fill(0);
  const arrived = zeros();
  const left = zeros();
  const applied = { SUCCEEDED: zeros(), SKIPPED: zeros(), DEAD: zeros() } as Record<'SUCCEEDED' | 'SKIPPED' | 'DEAD', number[]>;
  const latencies: number[][] = Array.from({ length: MINUTES }, () => []);
  let openNow = 0;
  for (const p of procs) {
    const open = p.state === 'PENDING' || p.state === 'FAILED';
    if (open) openNow++;
    const a = minuteIndex(p.enqueued_at, start);
    if (a >= 0 && a < MINUTES) arrived[a]++;
    if (!open && p.terminal_at) {
      const t = minuteIndex(p.terminal_at, start);
      if (t >= 0 && t < MINUTES) {
        left[t]++;
        applied[p.state as 'SUCCEEDED'][t]++;
        const since = p.received ?? p.enqueued_at;
        latencies[t].push(Math.max(0, (p.terminal_at.getTime() - since.getTime()) / 1000));
      }
    }
  }
  const backlog = zeros();
  let b = openNow;
  for (let i = MINUTES - 1; i >= 0; i--) {
    backlog[i] = Math.max(0, b);
    b = b - arrived[i] + left[i]; // the value at the end of the minute before
  }
  const created = zeros();
  const sent = zeros();
  let pendingNow = 0;
  for (const e of events) {
    if (e.state === 'PENDING') pendingNow++;
    const c = minuteIndex(e.created_at, start);
    if (c >= 0 && c < MINUTES) created[c]++;
    if (e.state === 'SENT' && e.sent_at) {
      const x = minuteIndex(e.sent_at, start);
      if (x >= 0 && x < MINUTES) sent[x]++;
    }
  }
  const pending = zeros();
  let q = pendingNow;
  for (let i = MINUTES - 1; i >= 0; i--) {
    pending[i] = Math.max(0, q);
    q = q - created[i] + sent[i];
  }
  const pct = (xs: number[], p: number) => {
    if (xs.length === 0) return null;
    const sorted = [...xs].sort((x, y) => x - y);
    return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] * 10) / 10;
  };
  return {
    start: new Date(start),
    backlog,
    applied,
    latencySeconds: { p50: latencies.map((l) => pct(l, 50)), p95: latencies.map((l) => pct(l, 95)), max: latencies.map((l) => pct(l, 100)) },
    dispatchPending: pending,
  };
}

/** The last hour per minute from Postgres (only rows touched in the hour are read; indexes on state/updated_at and the outbox's state). */
export async function lastHour(db: Db, clock: Clock, tz: string) {
  const now = clock.now();
  const from = new Date((Math.floor(now.getTime() / 60_000) + 1 - MINUTES) * 60_000);
  const [procs, events] = await Promise.all([ConsoleSql.readLastHourMessages(db, tz, from), ConsoleSql.readLastHourEvents(db, from)]);
  const h = hourSeries(procs, events, now);
  return {
    timeZone: tz,
    now: iso(now, tz),
    minutes: Array.from({ length: MINUTES }, (_, i) => iso(new Date(h.start.getTime() + i * 60_000), tz)),
    backlog: h.backlog,
    applied: h.applied,
    latencySeconds: h.latencySeconds,
    dispatchPending: h.dispatchPending,
  };
}

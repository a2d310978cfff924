// Every transition of an outbox row (msg_event) made by the dispatchers and their operator
// actions, one function each (flight-domain.md "Events", dispatch.md):
//   PENDING --send acknowledged--> SENT          markSent (conditional on event_id + version)
//   PENDING --send failed-------> PENDING+backoff | DEAD    markFailed
//   PENDING --schd state too big-> DEAD           (markFailed with a forced DEAD)
//   PENDING schd of a deleted/missing flight -> removed     dropGoneSchdRows
//   DEAD --dispatch-replay--> PENDING (attempts 0)          replayDead
//   DEAD --dispatch-skip----> SKIPPED                       skipDead
//   SENT older than retention -> removed                   deleteSentBefore
// Updates lock with SKIP LOCKED: a row the pump is rewriting right now (schd upsert) is left
// alone (it stays PENDING and goes out again) and the dispatcher never waits on the pump, so
// the two can never deadlock.
import { LOCKS } from '../db/postgres.ts';
import { sql } from 'kysely';
import type { Executor } from '../flight/store.ts';
import type { Target } from './metrics.ts';
import { msgValue } from '../contract/kafka.ts';
import type { AfterFailure } from './plan.ts';

/** Transaction-scoped advisory locks: one active round per target across all instances. */
export const DISPATCH_LOCKS: Record<Target, number> = { msg: LOCKS.MSG_DISPATCH_ROUND, schd: LOCKS.SCHD_DISPATCH_ROUND };

export async function tryRoundLock(tx: Executor, target: Target): Promise<boolean> {
  const r = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${DISPATCH_LOCKS[target]}) as ok`.execute(tx);
  return r.rows[0].ok;
}

export interface MsgRow {
  eventId: number;
  flid: string;
  stateVersion: number;
  attempts: number;
  /** The payload as stored (EVENT_ID inside), serialised once as the record value (lib/contract/kafka.ts msgValue). */
  value: string;
}

/**
 * The frozen batch of a msg round: PENDING and due, EVENT_ID order, at most `limit`, and no
 * earlier event of the same FLID that is DEAD or PENDING-not-due (plan.ts `releasable`).
 */
export async function freezeMsgBatch(db: Executor, now: Date, limit: number): Promise<MsgRow[]> {
  const r = await sql<{ event_id: number; flid: string; state_version: number; attempts: number; payload: Record<string, unknown> }>`
    select e.event_id, e.flid, e.state_version, e.attempts, e.payload
    from msg_event e
    where e.target = 'msg' and e.state = 'PENDING'
      and (e.next_attempt_at is null or e.next_attempt_at <= ${now})
      and not exists (
        select 1 from msg_event b
        where b.flid = e.flid and b.event_id < e.event_id and b.target = 'msg'
          and (b.state = 'DEAD' or (b.state = 'PENDING' and b.next_attempt_at > ${now})))
    order by e.event_id
    limit ${limit}`.execute(db);
  return r.rows.map((x) => ({ eventId: x.event_id, flid: x.flid, stateVersion: x.state_version, attempts: x.attempts, value: msgValue(x.payload) }));
}

export interface SchdRow {
  eventId: number;
  flid: string;
  stateVersion: number;
  attempts: number;
}

/** PENDING, due schd rows in EVENT_ID order (oldest write generation first). */
export async function pendingSchdRows(db: Executor, now: Date, limit: number): Promise<SchdRow[]> {
  const r = await sql<{ event_id: number; flid: string; state_version: number; attempts: number }>`
    select event_id, flid, state_version, attempts from msg_event
    where target = 'schd' and state = 'PENDING' and (next_attempt_at is null or next_attempt_at <= ${now})
    order by event_id
    limit ${limit}`.execute(db);
  return r.rows.map((x) => ({ eventId: x.event_id, flid: x.flid, stateVersion: x.state_version, attempts: x.attempts }));
}

export interface Acked {
  eventId: number;
  /** The version that went out: the row is marked only if it still holds it. */
  stateVersion: number;
  partition: number;
  offset: string | null;
}

/** Mark acknowledged rows SENT; rows rewritten meanwhile (new event_id / version) stay PENDING. Returns the event ids marked. */
export async function markSent(tx: Executor, acked: readonly Acked[], now: Date): Promise<number[]> {
  if (acked.length === 0) return [];
  const ids = acked.map((a) => a.eventId);
  const r = await sql<{ event_id: number }>`
    update msg_event m set state = 'SENT', sent_at = ${now}, attempts = m.attempts + 1, next_attempt_at = null,
      kafka_partition = u.p, kafka_offset = u.o
    from unnest(${ids}::bigint[], ${acked.map((a) => a.stateVersion)}::integer[], ${acked.map((a) => a.partition)}::integer[],
                ${acked.map((a) => a.offset)}::text[]) as u(id, ver, p, o)
    where m.event_id = u.id and m.state_version = u.ver and m.state = 'PENDING'
      and m.event_id in (select event_id from msg_event where event_id = any(${ids}::bigint[]) for update skip locked)
    returning m.event_id`.execute(tx);
  return r.rows.map((x) => x.event_id);
}

export interface Failed {
  eventId: number;
  /** attempts as read: a row changed meanwhile (replayed, rewritten) is left alone. */
  attemptsBefore: number;
  next: AfterFailure;
}

/** Record failed sends (backoff or DEAD) with the error text. Returns the event ids that went DEAD. */
export async function markFailed(tx: Executor, failed: readonly Failed[], error: string): Promise<number[]> {
  if (failed.length === 0) return [];
  const ids = failed.map((f) => f.eventId);
  const r = await sql<{ event_id: number; state: string }>`
    update msg_event m set state = u.st, attempts = u.att, next_attempt_at = u.nxt, last_error = ${error.slice(0, 2000)}
    from unnest(${ids}::bigint[], ${failed.map((f) => f.attemptsBefore)}::integer[], ${failed.map((f) => f.next.state)}::text[],
                ${failed.map((f) => f.next.attempts)}::integer[], ${failed.map((f) => f.next.nextAttemptAt?.toISOString() ?? null)}::timestamptz[])
         as u(id, before, st, att, nxt)
    where m.event_id = u.id and m.attempts = u.before and m.state = 'PENDING'
      and m.event_id in (select event_id from msg_event where event_id = any(${ids}::bigint[]) for update skip locked)
    returning m.event_id, m.state`.execute(tx);
  return r.rows.filter((x) => x.state === 'DEAD').map((x) => x.event_id);
}

/** schd rows whose flight is missing or DELETED: removed (deletions are never published on schd, C-9). */
export async function dropGoneSchdRows(tx: Executor, eventIds: readonly number[]): Promise<number> {
  if (eventIds.length === 0) return 0;
  const r = await sql`
    delete from msg_event where target = 'schd' and state = 'PENDING'
      and event_id in (select event_id from msg_event where event_id = any(${[...eventIds]}::bigint[]) for update skip locked)`.execute(tx);
  return Number(r.numAffectedRows ?? 0);
}

/** Events that backed off only because Kafka was unreachable: due at once now that it answers (lib/dispatch/outage.ts). */
export async function releaseBackoff(db: Executor, eventIds: readonly number[]): Promise<number> {
  if (eventIds.length === 0) return 0;
  const r = await sql`
    update msg_event set next_attempt_at = null
    where event_id = any(${[...eventIds]}::bigint[]) and state = 'PENDING' and next_attempt_at is not null`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** Earliest future retry among PENDING rows of a target (null: nothing waits on backoff). */
export async function nextAttemptAt(db: Executor, target: Target, now: Date): Promise<Date | null> {
  const r = await sql<{ at: Date | null }>`
    select min(next_attempt_at) as at from msg_event where target = ${target} and state = 'PENDING' and next_attempt_at > ${now}`.execute(db);
  return r.rows[0]?.at ?? null;
}

export interface DeadSelector {
  eventIds?: number[];
  flid?: string;
  /** Every DEAD row (of `target` when given). */
  all?: boolean;
  target?: Target;
}

function deadWhere(s: DeadSelector) {
  const parts = [sql`state = 'DEAD'`];
  if (s.eventIds?.length) parts.push(sql`event_id = any(${s.eventIds}::bigint[])`);
  if (s.flid !== undefined) parts.push(sql`flid = ${s.flid}`);
  if (s.target) parts.push(sql`target = ${s.target}`);
  return sql.join(parts, sql` and `);
}

/** DEAD → PENDING with attempts 0, due now (sent again in EVENT_ID order). last_error is kept. */
export async function replayDead(tx: Executor, s: DeadSelector): Promise<{ eventId: number; target: Target }[]> {
  const r = await sql<{ event_id: number; target: Target }>`
    update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null
    where ${deadWhere(s)} returning event_id, target`.execute(tx);
  return r.rows.map((x) => ({ eventId: x.event_id, target: x.target })).sort((a, b) => a.eventId - b.eventId);
}

/** DEAD → SKIPPED (kept, visible; it no longer holds its FLID's later events). */
export async function skipDead(tx: Executor, s: DeadSelector): Promise<{ eventId: number; target: Target }[]> {
  const r = await sql<{ event_id: number; target: Target }>`
    update msg_event set state = 'SKIPPED', next_attempt_at = null
    where ${deadWhere(s)} returning event_id, target`.execute(tx);
  return r.rows.map((x) => ({ eventId: x.event_id, target: x.target })).sort((a, b) => a.eventId - b.eventId);
}

export interface DeadRow {
  event_id: number;
  target: Target;
  flid: string;
  state_version: number;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  payload: unknown;
  /** PENDING events of the same FLID (msg) waiting behind this one. */
  held: number;
}

export async function listDead(db: Executor, q: { target?: Target; limit: number }): Promise<DeadRow[]> {
  const r = await sql<DeadRow>`
    select d.event_id, d.target, d.flid, d.state_version, d.attempts, d.last_error, d.created_at, d.payload,
      (select count(*)::int from msg_event h where h.flid = d.flid and h.target = 'msg' and d.target = 'msg'
         and h.event_id > d.event_id and h.state = 'PENDING') as held
    from msg_event d
    where d.state = 'DEAD' ${q.target ? sql`and d.target = ${q.target}` : sql``}
    order by d.event_id
    limit ${q.limit}`.execute(db);
  return r.rows;
}

/** Delete up to `batch` SENT rows sent before `cutoff`. Returns the number deleted. */
export async function deleteSentBefore(db: Executor, cutoff: Date, batch: number): Promise<number> {
  const r = await sql`
    delete from msg_event where event_id in (
      select event_id from msg_event where state = 'SENT' and sent_at < ${cutoff}
      order by sent_at limit ${batch} for update skip locked)`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

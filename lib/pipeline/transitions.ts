// Every PROC_STATE transition, one function each; the state machine reads from this file.
//   enqueue → (bindIdentity) → markSucceeded (or markCarriedSucceeded / bindIdentity's carried
//   form, in the next message's business transaction) | markTerminal | recordFailure
//   → recordBackfill / abandonBackfill
//   replay: FAILED/DEAD → PENDING
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import { reasonLabel, metrics } from '../runtime/metrics.ts';
import type { Decision } from './failures.ts';

type Q = Kysely<Database> | Transaction<Database>;

export interface HeadRow {
  msg_id: number;
  state: 'PENDING' | 'FAILED';
  identity_key: string | null;
  attempts: number;
  failures_in_row: number;
  failing_since: Date | null;
  next_attempt_at: Date | null;
  error_class: string | null;
  enqueued_at: Date;
  kind: string | null;
}

export type TerminalState = 'SUCCEEDED' | 'SKIPPED' | 'DEAD';

/** Intake: insert-if-absent. Returns the IDs that were new. */
export async function enqueue(db: Q, rows: { id: number; received: string | null }[], now: Date): Promise<number[]> {
  if (rows.length === 0) return [];
  const res = await db
    .insertInto('proc_state')
    .values(rows.map((r) => ({ msg_id: r.id, received_at: r.received, enqueued_at: now, updated_at: now })))
    .onConflict((oc) => oc.column('msg_id').doNothing())
    .returning('msg_id')
    .execute();
  return res.map((r) => r.msg_id);
}

const HEAD_COLUMNS = sql`msg_id, state, identity_key, attempts, failures_in_row, failing_since, next_attempt_at, error_class, enqueued_at, kind`;

/**
 * Head of queue: the smallest MSG_ID that is PENDING or FAILED. `after`: a message whose
 * SUCCEEDED is carried into the next business transaction (pump.ts) is finished though not yet
 * marked — the head is then the next one above it.
 */
export async function head(db: Q, after?: number): Promise<HeadRow | undefined> {
  return (await heads(db, 1, after))[0];
}

/**
 * The head and the open messages after it, at most `limit`, cut before the first FAILED one
 * after the head: a PENDING row is changed by the pump alone (replay only touches FAILED/DEAD
 * rows), so the pump can take the following heads from this list within one PIPELINE_LOCK hold.
 */
export async function heads(db: Q, limit: number, after?: number): Promise<HeadRow[]> {
  const r = await sql<HeadRow>`select ${HEAD_COLUMNS} from proc_state where state in ('PENDING', 'FAILED') ${after === undefined ? sql`` : sql`and msg_id > ${after}`} order by msg_id limit ${limit}`.execute(db);
  const cut = r.rows.findIndex((h, i) => i > 0 && h.state !== 'PENDING');
  return cut < 0 ? r.rows : r.rows.slice(0, cut);
}

/**
 * A message whose steps 1 and 2 are done (business commit, Redis written) and whose SUCCEEDED
 * is carried into the next message's business transaction (pump.ts); `at` is its terminal time.
 */
export interface CarriedSuccess {
  msgId: number;
  kind: string;
  at: Date;
}

/** The SUCCEEDED update of a carried message as a CTE body (same columns as markTerminal). */
function succeededUpdate(c: CarriedSuccess) {
  return sql`update proc_state set state = 'SUCCEEDED', reason = null, terminal_at = ${c.at}, backfill_next_at = ${c.at}, next_attempt_at = null,
                                   updated_at = ${c.at}, kind = coalesce(${c.kind || null}::text, kind)
             where msg_id = ${c.msgId} and state in ('PENDING', 'FAILED') returning msg_id`;
}

function carriedNotOpen(c: CarriedSuccess): Error {
  return new Error(`message ${c.msgId} was not open when marking it SUCCEEDED`);
}

/** Count a terminal outcome (after its commit). */
export function countTerminal(state: TerminalState, reason: string | null, kind: string | null | undefined): void {
  metrics.messages.inc({ kind: kind ?? '', state, reason: reasonLabel(reason) });
  if (reason?.startsWith('duplicate-of:')) metrics.identityDuplicates.inc();
}

/**
 * INV-6: bind once. One statement that never raises for a duplicate (so it can run inside the
 * business transaction): binds when no other message owns the key, and reports the owner
 * otherwise. The unique constraint stays the guard (a race it lost would raise 23505 and roll
 * the caller's transaction back: the message is retried, nothing is lost).
 * With `carried`, the same statement marks the previous message SUCCEEDED (markCarriedSucceeded):
 * the caller's transaction is then that message's terminal commit too.
 */
export async function bindIdentity(db: Q, msgId: number, key: string, now: Date, carried?: CarriedSuccess): Promise<{ bound: true } | { duplicateOf: number }> {
  const r = await sql<{ owner: number | null; carried: number }>`
    with owner as (select msg_id from proc_state where identity_key = ${key}),
         upd as (update proc_state set identity_key = ${key}, updated_at = ${now}
                 where msg_id = ${msgId} and identity_key is null and not exists (select 1 from owner) returning msg_id)
         ${carried ? sql`, prev as (${succeededUpdate(carried)})` : sql``}
    select (select msg_id from owner limit 1) as owner, (select count(*) from upd)::int as bound,
           ${carried ? sql`(select count(*) from prev)::int` : sql`1`} as carried`.execute(db);
  if (carried && r.rows[0]?.carried !== 1) throw carriedNotOpen(carried);
  const owner = r.rows[0]?.owner ?? null;
  if (owner !== null && Number(owner) !== msgId) return { duplicateOf: Number(owner) };
  return { bound: true };
}

/**
 * Terminal state + TERMINAL_AT + backfill intent, one statement (non-business outcomes; also the
 * SUCCEEDED step). With `wakeBackfill` the backfill wake-up is part of the same statement (a
 * data-modifying CTE + add_job on its row): atomic without an explicit transaction, one round trip.
 */
export async function markTerminal(db: Q, msgId: number, state: TerminalState, reason: string | null, now: Date, kind?: string | null, opts: { wakeBackfill?: boolean } = {}): Promise<void> {
  const res = await sql<{ msg_id: number }>`
    with t as (
      update proc_state set state = ${state}, reason = ${reason}, terminal_at = ${now}, backfill_next_at = ${now}, next_attempt_at = null,
                            updated_at = ${now}, kind = coalesce(${kind || null}::text, kind)
      where msg_id = ${msgId} and state in ('PENDING', 'FAILED') returning msg_id)
    select t.msg_id ${opts.wakeBackfill ? sql`, ${wakeExpr(['backfill'])} as woken` : sql``} from t`.execute(db);
  if (res.rows.length !== 1) throw new Error(`message ${msgId} was not open when marking it ${state}`);
  countTerminal(state, reason, kind);
}

/** Business success (step 3): SUCCEEDED + backfill intent + backfill wake-up, one statement. */
export async function markSucceeded(db: Q, msgId: number, now: Date, kind: string): Promise<void> {
  await markTerminal(db, msgId, 'SUCCEEDED', null, now, kind, { wakeBackfill: true });
}

/**
 * Business success (step 3) of a carried message, inside the next message's business
 * transaction (when that message has no identity to bind; otherwise bindIdentity does it in its
 * statement). The caller adds 'backfill' to the transaction's wake-ups and counts the outcome
 * (countTerminal) after the commit.
 */
export async function markCarriedSucceeded(db: Q, c: CarriedSuccess): Promise<void> {
  const r = await sql<{ msg_id: number }>`with prev as (${succeededUpdate(c)}) select msg_id from prev`.execute(db);
  if (r.rows.length !== 1) throw carriedNotOpen(c);
}

/** Execute a failure decision (lib/pipeline/failures.ts). */
export async function recordFailure(db: Q, msgId: number, d: Decision, errorClass: string, now: Date, kind: string | null): Promise<void> {
  if (d.next === 'DEAD') {
    await db
      .updateTable('proc_state')
      .set((eb) => ({ attempts: d.countAttempt ? eb('attempts', '+', 1) : eb.ref('attempts'), error_class: errorClass }))
      .where('msg_id', '=', msgId)
      .execute();
    await markTerminal(db, msgId, 'DEAD', d.reason, now, kind);
    return;
  }
  metrics.failures.inc({ class: errorClass });
  await db
    .updateTable('proc_state')
    .set((eb) => ({
      state: 'FAILED',
      reason: d.reason,
      error_class: errorClass,
      attempts: d.countAttempt ? eb('attempts', '+', 1) : eb.ref('attempts'),
      failures_in_row: eb('failures_in_row', '+', 1),
      failing_since: sql<Date>`coalesce(failing_since, ${now})`,
      next_attempt_at: new Date(now.getTime() + d.retryInMs),
      updated_at: now,
      ...(kind ? { kind } : {}),
    }))
    .where('msg_id', '=', msgId)
    .execute();
}

/** Backfill confirmed (written or already marked). */
export async function recordBackfill(db: Q, ids: number[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('proc_state').set({ backfill_at: now, updated_at: now }).where('msg_id', 'in', ids).where('backfill_at', 'is', null).execute();
}

/** Backfill transient failure: back off (the ladder's last step repeats). */
export async function recordBackfillFailure(db: Q, ids: number[], ladder: number[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  const steps = sql.join(ladder.map((ms) => sql`${ms}::bigint`));
  await db
    .updateTable('proc_state')
    .set((eb) => ({
      backfill_attempts: eb('backfill_attempts', '+', 1),
      backfill_next_at: sql<Date>`${now}::timestamptz + (((array[${steps}])[least(backfill_attempts + 1, ${ladder.length})]) || ' milliseconds')::interval`,
      updated_at: now,
    }))
    .where('msg_id', 'in', ids)
    .execute();
}

/** Abandon (MISSING_ROW | TRANSIENT_DEADLINE); abandoned ≠ backfilled. */
export async function abandonBackfill(db: Q, ids: number[], reason: 'MISSING_ROW' | 'TRANSIENT_DEADLINE', now: Date): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('proc_state')
    .set({ backfill_abandoned_at: now, backfill_abandoned_reason: reason, updated_at: now })
    .where('msg_id', 'in', ids)
    .where('backfill_at', 'is', null)
    .execute();
  metrics.backfillAbandoned.inc({ reason }, ids.length);
}

/** Operator: resume abandoned backfills. */
export async function resumeBackfill(db: Q, sel: { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' }, now: Date): Promise<number[]> {
  let q = db
    .updateTable('proc_state')
    .set({ backfill_abandoned_at: null, backfill_abandoned_reason: null, backfill_attempts: 0, backfill_next_at: now, updated_at: now })
    .where('backfill_abandoned_at', 'is not', null);
  if (sel.ids) q = q.where('msg_id', 'in', sel.ids.length ? sel.ids : [-1]);
  if (sel.reason) q = q.where('backfill_abandoned_reason', '=', sel.reason);
  return (await q.returning('msg_id').execute()).map((r) => r.msg_id);
}

/**
 * Replay: whitelisted FAILED/DEAD → PENDING, attempts and times reset, IDENTITY_KEY kept.
 * Whitelist: FAILED (any class), DEAD(EXHAUSTED); DEAD(MALFORMED|PROTOCOL) only with force.
 */
export async function replay(db: Q, sel: { ids?: number[]; state?: 'FAILED' | 'DEAD'; reasonPrefix?: string; force?: boolean }, now: Date): Promise<number[]> {
  let q = db
    .updateTable('proc_state')
    .set({
      state: 'PENDING',
      reason: null,
      error_class: null,
      attempts: 0,
      failures_in_row: 0,
      failing_since: null,
      next_attempt_at: null,
      terminal_at: null,
      backfill_next_at: null,
      backfill_at: null,
      backfill_attempts: 0,
      backfill_abandoned_at: null,
      backfill_abandoned_reason: null,
      updated_at: now,
    })
    .where((eb) =>
      eb.or([
        eb('state', '=', 'FAILED'),
        eb.and([eb('state', '=', 'DEAD'), eb('reason', 'like', 'EXHAUSTED%')]),
        ...(sel.force ? [eb.and([eb('state', '=', 'DEAD'), eb.or([eb('reason', 'like', 'MALFORMED%'), eb('reason', 'like', 'PROTOCOL%')])])] : []),
      ]),
    );
  if (sel.ids) q = q.where('msg_id', 'in', sel.ids.length ? sel.ids : [-1]);
  if (sel.state) q = q.where('state', '=', sel.state);
  if (sel.reasonPrefix) q = q.where('reason', 'like', `${sel.reasonPrefix}%`);
  return (await q.returning('msg_id').execute()).map((r) => r.msg_id);
}

/**
 * A scalar SQL expression that wakes these tasks (job_key = task name) inside the caller's
 * statement/transaction, with at most one add_jobs call:
 * - a job of that key that is pending, available (not locked by a worker, attempts left) and due
 *   is locked FOR UPDATE until the caller commits: no worker can start it before the caller's
 *   writes are visible, so it will run after them — the wake-up is already there and add_jobs
 *   is skipped for it; a NOTIFY (graphile-worker's 'jobs:insert' channel, as add_jobs sends)
 *   nudges a worker that skipped the locked row meanwhile;
 * - any other key (no job, a job running, a job waiting with run_at in the future or out of
 *   attempts) goes through add_jobs, which replaces/re-arms it exactly as add_job would.
 * A wake-up is therefore never lost: after the commit, for each task a job exists that has not
 * started before the commit.
 */
export function wakeExpr(tasks: Iterable<string>) {
  const list = [...new Set(tasks)];
  return sql<number>`(with pending as (select key from graphile_worker._private_jobs
                                      where key = any(${list}::text[]) and is_available and run_at <= now() for update),
                          missing as (select t from unnest(${list}::text[]) as t where t not in (select key from pending))
                     select case when exists (select 1 from missing)
                                 then (select count(*) from graphile_worker.add_jobs(
                                        array(select (m.t, '{}'::json, null, null, null, m.t, null, null)::graphile_worker.job_spec from missing m)))
                                 else 0 end
                          + case when exists (select 1 from pending) then (select 0 from pg_notify('jobs:insert', '{"count":1}')) else 0 end)`;
}

/** Wake several graphile-worker tasks (each coalesced by its job_key) with one statement (wakeExpr). */
export async function wakeAll(db: Q, tasks: Iterable<string>): Promise<void> {
  const list = [...new Set(tasks)];
  if (list.length === 0) return;
  await sql`select ${wakeExpr(list)}`.execute(db);
}

/** Wake a graphile-worker task (coalesced by job_key) inside the caller's transaction. */
export async function wake(db: Q, task: string, runAt?: Date): Promise<void> {
  await sql`select graphile_worker.add_job(${task}, '{}'::json, job_key := ${task}, run_at := ${runAt ?? null}::timestamptz)`.execute(db);
}

// Every PROC_STATE transition, one function each; the state machine reads from this file.
//   enqueue → (bindIdentity) → markSucceeded | markTerminal | recordFailure → recordBackfill / abandonBackfill
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

/** Head of queue: the smallest MSG_ID that is PENDING or FAILED. */
export async function head(db: Q): Promise<HeadRow | undefined> {
  return (await db
    .selectFrom('proc_state')
    .select(['msg_id', 'state', 'identity_key', 'attempts', 'failures_in_row', 'failing_since', 'next_attempt_at', 'error_class', 'enqueued_at', 'kind'])
    .where('state', 'in', ['PENDING', 'FAILED'])
    .orderBy('msg_id')
    .limit(1)
    .executeTakeFirst()) as HeadRow | undefined;
}

/** INV-6: bind once with the unique constraint. Returns 'bound' or the message that owns the key. */
export async function bindIdentity(db: Q, msgId: number, key: string, now: Date): Promise<{ bound: true } | { duplicateOf: number }> {
  try {
    await db
      .updateTable('proc_state')
      .set({ identity_key: key, updated_at: now })
      .where('msg_id', '=', msgId)
      .where('identity_key', 'is', null)
      .execute();
    return { bound: true };
  } catch (e) {
    if ((e as { code?: string }).code !== '23505') throw e;
    const owner = await db.selectFrom('proc_state').select('msg_id').where('identity_key', '=', key).executeTakeFirst();
    if (!owner) throw e;
    return { duplicateOf: owner.msg_id };
  }
}

/** Record the kind (TYPE/STYP) once decoded. */
export async function setKind(db: Q, msgId: number, kind: string): Promise<void> {
  await db.updateTable('proc_state').set({ kind }).where('msg_id', '=', msgId).where('kind', 'is distinct from', kind).execute();
}

/** Terminal state + TERMINAL_AT + backfill intent, one statement (non-business outcomes; also SUCCEEDED inside its tx). */
export async function markTerminal(db: Q, msgId: number, state: TerminalState, reason: string | null, now: Date, kind?: string | null): Promise<void> {
  const res = await db
    .updateTable('proc_state')
    .set({
      state,
      reason,
      terminal_at: now,
      backfill_next_at: now,
      next_attempt_at: null,
      updated_at: now,
      ...(kind ? { kind } : {}),
    })
    .where('msg_id', '=', msgId)
    .where('state', 'in', ['PENDING', 'FAILED'])
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new Error(`message ${msgId} was not open when marking it ${state}`);
  metrics.messages.inc({ kind: kind ?? '', state, reason: reasonLabel(reason) });
  if (reason?.startsWith('duplicate-of:')) metrics.identityDuplicates.inc();
}

/** Business success (step 3): SUCCEEDED + backfill intent + backfill wake-up, one transaction. */
export async function markSucceeded(tx: Transaction<Database>, msgId: number, now: Date, kind: string): Promise<void> {
  await markTerminal(tx, msgId, 'SUCCEEDED', null, now, kind);
  await wake(tx, 'backfill');
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

/** Wake a graphile-worker task (coalesced by job_key) inside the caller's transaction. */
export async function wake(db: Q, task: string, runAt?: Date): Promise<void> {
  await sql`select graphile_worker.add_job(${task}, '{}'::json, job_key := ${task}, run_at := ${runAt ?? null}::timestamptz)`.execute(db);
}

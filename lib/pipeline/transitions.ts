// Every PROC_STATE transition, one function each; the state machine reads from this file.
//   enqueue → heads → identityOwners … recordApplied (outcome + identity, in the batch's business transaction)
//   → markFinished (terminal = the applied outcome, after the Redis step)
//   | markTerminal (one message, no business transaction) | recordFailure
//   → recordBackfill / recordBackfillFailure / abandonBackfill / resumeBackfill
//   replay: FAILED/DEAD → PENDING
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import { TASK } from '../core/tasks.ts';
import { reasonLabel, metrics } from '../runtime/metrics.ts';
import type { Decision } from './failures.ts';

type Q = Kysely<Database> | Transaction<Database>;

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

const HEAD_COLUMNS = sql`msg_id, state, identity_key, attempts, failures_in_row, failing_since, next_attempt_at, error_class, enqueued_at, kind, reason, applied_state, applied_reason`;

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
  reason: string | null;
  /** Set: the message's business transaction committed this outcome; it is not applied again. */
  applied_state: TerminalState | null;
  applied_reason: string | null;
}

/**
 * The head of queue (smallest open MSG_ID) and the open messages after it, at most `limit`, cut
 * before the first FAILED one after the head: a PENDING row is changed by the pump alone (replay
 * only touches FAILED/DEAD rows), so the pump can apply the list as one batch.
 */
export async function heads(db: Q, limit: number): Promise<HeadRow[]> {
  const r = await sql<HeadRow>`select ${HEAD_COLUMNS} from proc_state where state in ('PENDING', 'FAILED') order by msg_id limit ${limit}`.execute(db);
  const cut = r.rows.findIndex((h, i) => i > 0 && h.state !== 'PENDING');
  return cut < 0 ? r.rows : r.rows.slice(0, cut);
}

/** Count a terminal outcome (after its commit); `kindLabel` bounded (HandlerRegistry.metricKindOf). */
export function countTerminal(state: TerminalState, reason: string | null, kindLabel: string): void {
  metrics.messages.inc({ kind: kindLabel, state, reason: reasonLabel(reason) });
  if (reason?.startsWith('duplicate-of:')) metrics.identityDuplicates.inc();
}

/**
 * INV-6: bind once, for a batch, in one statement that never raises for a duplicate (so it runs
 * inside the business transaction). A key is bound to the first message of the batch that
 * carries it unless another message owns it already. Returns the owner of each message's key:
 * itself (bound), or another message (a duplicate). The unique constraint stays the guard.
 */
export async function bindIdentities(db: Q, rows: readonly { msgId: number; key: string }[], now: Date): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (rows.length === 0) return out;
  const r = await sql<{ msg_id: string; owner: string }>`
    with req as (select * from unnest(${rows.map((x) => x.msgId)}::bigint[], ${rows.map((x) => x.key)}::text[]) with ordinality as u(msg_id, key, ord)),
         firsts as (select distinct on (key) key, msg_id from req order by key, ord),
         owner as (select identity_key as key, msg_id from proc_state where identity_key = any(${rows.map((x) => x.key)}::text[])),
         upd as (update proc_state p set identity_key = f.key, updated_at = ${now}
                 from firsts f where p.msg_id = f.msg_id and p.identity_key is null and not exists (select 1 from owner o where o.key = f.key)
                 returning p.msg_id)
    select r.msg_id, coalesce(o.msg_id, f.msg_id) as owner, (select count(*) from upd) as n
    from req r join firsts f on f.key = r.key left join owner o on o.key = r.key`.execute(db);
  for (const x of r.rows) out.set(Number(x.msg_id), Number(x.owner));
  return out;
}

/** The messages that own these identity keys already (read at the start of a batch: its duplicates). */
export async function identityOwners(db: Q, keys: readonly string[]): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const r = await sql<{ identity_key: string; msg_id: string }>`select identity_key, msg_id from proc_state where identity_key = any(${[...new Set(keys)]}::text[])`.execute(db);
  return new Map(r.rows.map((x) => [x.identity_key, Number(x.msg_id)]));
}

export interface AppliedOutcome {
  msgId: number;
  state: TerminalState;
  reason: string | null;
  kind: string | null;
  /** The identity this message binds (INV-6: bound once; null = bound already, a duplicate, or none). */
  identityKey: string | null;
}

/**
 * The end of a batch's business transaction, one statement: every message's outcome
 * (APPLIED_STATE: the business effect is known committed) and its identity binding, and the
 * batch's dispatcher wake-ups. The unique constraint on IDENTITY_KEY stays the guard against a
 * duplicate the batch did not see (the transaction then rolls back and is retried).
 */
export async function recordApplied(db: Q, rows: readonly AppliedOutcome[], now: Date, wakeTasks: Iterable<string>): Promise<void> {
  const tasks = [...new Set(wakeTasks)];
  const r = await sql<{ n: number }>`
    with a as (
      update proc_state p set applied_state = u.state, applied_reason = u.reason, kind = coalesce(u.kind, p.kind),
                              identity_key = coalesce(u.identity_key, p.identity_key), updated_at = ${now}
      from unnest(${rows.map((x) => x.msgId)}::bigint[], ${rows.map((x) => x.state)}::text[], ${rows.map((x) => x.reason)}::text[], ${rows.map((x) => x.kind)}::text[],
                  ${rows.map((x) => x.identityKey)}::text[]) as u(msg_id, state, reason, kind, identity_key)
      where p.msg_id = u.msg_id and p.state in ('PENDING', 'FAILED') returning 1)
    select (select count(*) from a)::int as n ${tasks.length ? sql`, ${wakeExpr(tasks)} as woken` : sql``}`.execute(db);
  if (r.rows[0]?.n !== rows.length) throw new Error(`recordApplied: ${r.rows[0]?.n} of ${rows.length} messages were open`);
}

/**
 * Step 3 for a batch: each message's applied outcome becomes its terminal state, with
 * TERMINAL_AT and the backfill intent, and backfill is woken — one statement. Returns what was
 * finished (a message no longer open, e.g. replayed meanwhile, is left alone).
 */
export async function markFinished(db: Q, msgIds: readonly number[], now: Date): Promise<{ msg_id: number; state: TerminalState; reason: string | null; kind: string | null }[]> {
  if (msgIds.length === 0) return [];
  const r = await sql<{ msg_id: string; state: TerminalState; reason: string | null; kind: string | null }>`
    with t as (
      update proc_state set state = applied_state, reason = applied_reason, terminal_at = ${now}, backfill_next_at = ${now},
                            next_attempt_at = null, updated_at = ${now}
      where msg_id = any(${[...msgIds]}::bigint[]) and state in ('PENDING', 'FAILED') and applied_state is not null
      returning msg_id, state, reason, kind)
    select t.*, ${wakeExpr([TASK.backfill])} as woken from t order by msg_id`.execute(db);
  return r.rows.map((x) => ({ ...x, msg_id: Number(x.msg_id) }));
}

/**
 * Terminal state + TERMINAL_AT + backfill intent + backfill wake-up, one statement: an outcome
 * decided without a business transaction (a FAILED head whose attempts are used up).
 */
export async function markTerminal(db: Q, msgId: number, state: TerminalState, reason: string | null, now: Date, kind?: string | null): Promise<void> {
  const res = await sql<{ msg_id: number }>`
    with t as (
      update proc_state set state = ${state}, reason = ${reason}, terminal_at = ${now}, backfill_next_at = ${now}, next_attempt_at = null,
                            updated_at = ${now}, kind = coalesce(${kind || null}::text, kind)
      where msg_id = ${msgId} and state in ('PENDING', 'FAILED') returning msg_id)
    select t.msg_id, ${wakeExpr([TASK.backfill])} as woken from t`.execute(db);
  if (res.rows.length !== 1) throw new Error(`message ${msgId} was not open when marking it ${state}`);
}

/**
 * A failure of message `msgId`, decided on the attempt count as committed (the row is locked
 * first: a replay that reset the message while it was being processed is not undone by a
 * decision taken on the count as read). Records the attempt (proc_attempt), then FAILED with
 * the next attempt time, or DEAD + terminal + backfill wake-up; `bindKey`: a DEAD message keeps
 * its identity (the failed business transaction rolled the binding back). One transaction.
 */
export async function recordFailure(
  db: Kysely<Database>,
  msgId: number,
  f: { cls: string; detail: string },
  decideFor: (h: { attempts: number; failuresInRow: number }) => Decision,
  now: Date,
  kind: string | null,
  bindKey: string | null = null,
): Promise<Decision> {
  return db.transaction().execute(async (tx) => {
    const row = await sql<{ attempts: number; failures_in_row: number }>`select attempts, failures_in_row from proc_state where msg_id = ${msgId} for update`.execute(tx);
    const h = row.rows[0];
    if (!h) throw new Error(`message ${msgId} is not known`);
    const d = decideFor({ attempts: Number(h.attempts), failuresInRow: Number(h.failures_in_row) });
    await sql`insert into proc_attempt (msg_id, attempt_at, error_class, detail, next_state) values (${msgId}, ${now}, ${f.cls}, ${f.detail.slice(0, 2000)}, ${d.next})`.execute(tx);
    if (d.next === 'DEAD') {
      if (bindKey) await bindIdentities(tx, [{ msgId, key: bindKey }], now);
      await sql`update proc_state set attempts = attempts + ${d.countAttempt ? 1 : 0}, error_class = ${f.cls} where msg_id = ${msgId}`.execute(tx);
      await markTerminal(tx, msgId, 'DEAD', d.reason, now, kind);
      return d;
    }
    await sql`update proc_state set state = 'FAILED', reason = ${d.reason}, error_class = ${f.cls}, attempts = attempts + ${d.countAttempt ? 1 : 0},
                                     failures_in_row = failures_in_row + 1, failing_since = coalesce(failing_since, ${now}),
                                     next_attempt_at = ${new Date(now.getTime() + d.retryInMs)}, updated_at = ${now}, kind = coalesce(${kind}::text, kind)
              where msg_id = ${msgId} and state in ('PENDING', 'FAILED')`.execute(tx);
    metrics.failures.inc({ class: f.cls });
    return d;
  });
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
  await db.updateTable('proc_state').set({ backfill_abandoned_at: now, backfill_abandoned_reason: reason, updated_at: now }).where('msg_id', 'in', ids).where('backfill_at', 'is', null).execute();
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
      applied_state: null,
      applied_reason: null,
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
 * A scalar SQL expression that wakes these tasks inside the caller's statement/transaction:
 * graphile-worker's public `add_jobs`, one job per task with job_key = task name. A job of that
 * key that is waiting is replaced (run now); one that is running keeps running and a new one is
 * queued behind it (graphile-worker clears the running job's key) — a wake-up is never lost.
 */
export function wakeExpr(tasks: Iterable<string>) {
  const list = [...new Set(tasks)];
  return sql<number>`(select count(*) from graphile_worker.add_jobs(
                        array(select (t, '{}'::json, null, null, null, t, null, null)::graphile_worker.job_spec from unnest(${list}::text[]) as t)))`;
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

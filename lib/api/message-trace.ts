// "What happened to message 1234?" (issue 12): one read of everything recorded about one inbox
// message — its inbox row (received, processed time written back), identity, every failed
// attempt (PROC_ATTEMPT), terminal state and reason, the flights it changed with the fields
// before -> after (FLIGHT_CHANGE), the outbox events of those versions with topic, partition and
// offset once sent (MSG_EVENT), and its backfill. Read-only; every time is ISO-8601 in the
// airport's zone with its offset.
import type mysql from 'mysql2/promise';
import { sql } from 'kysely';
import type { Db } from '../db/postgres.ts';
import { INBOX_TABLE, type Inbox } from '../db/mysql.ts';
import { withTimeout } from '../core/timeout.ts';
import { changeView, iso, localWall } from '../flight/timeline.ts';

export interface TraceDeps {
  db: Db;
  inbox: Inbox;
  timeZone: string;
  topics: { msg: string; schd: string };
  ioTimeoutMs: number;
}

async function inboxRow(d: TraceDeps, id: number) {
  try {
    const [rows] = await withTimeout(
      d.ioTimeoutMs,
      'inbox trace read',
      d.inbox.query<mysql.RowDataPacket[]>(
        `SELECT CMINMSGS_DATE_RECEIVED AS received, CMINMSGS_DATE_PROCESSED AS processed, CMINMSGS_SUBSYSTEM_NAME AS sndr,
                CMINMSGS_SUBSYSTEM_SEQUENCE AS seqn, CMINMSGS_SUBSYSTEM_TYPE AS type, CMINMSGS_SUBSYSTEM_SUBTYPE AS styp,
                CMINMSGS_STATUS AS status, CHAR_LENGTH(CMINMSGS_CLOB_MSG) AS chars, LEFT(CMINMSGS_CLOB_MSG, 4000) AS excerpt
           FROM ${INBOX_TABLE} WHERE CMINMSGS_ID = ?`,
        [id],
      ),
    );
    const r = rows[0];
    if (!r) return { present: false as const };
    return {
      present: true as const,
      received: localWall(r.received, d.timeZone),
      processed: localWall(r.processed, d.timeZone),
      sender: r.sndr ?? null,
      sequence: r.seqn === null ? null : Number(r.seqn),
      type: r.type ?? null,
      subtype: r.styp ?? null,
      status: r.status ?? null,
      chars: Number(r.chars),
      excerpt: String(r.excerpt ?? ''),
    };
  } catch (e) {
    return { present: null, error: `inbox unavailable: ${(e as Error).message}` };
  }
}

export type MessageTrace = Awaited<ReturnType<typeof messageTrace>>;

/** The trace of one message; `found` is false when neither Postgres nor the inbox knows it. */
export async function messageTrace(d: TraceDeps, id: number) {
  const tz = d.timeZone;
  const [inbox, ps, attempts, changes, events] = await Promise.all([
    inboxRow(d, id),
    sql<Record<string, any>>`select *, received_at::text as received_local from proc_state where msg_id = ${id}`.execute(d.db),
    sql<Record<string, any>>`select attempt_at, error_class, detail, next_state from proc_attempt where msg_id = ${id} order by attempt_at`.execute(d.db),
    sql<Record<string, any>>`select * from flight_change where msg_id = ${id} order by flid, state_version`.execute(d.db),
    sql<Record<string, any>>`
      select e.event_id, e.target, e.flid, e.state_version, e.state, e.attempts, e.sent_at, e.kafka_partition, e.kafka_offset,
             e.last_error, e.created_at, coalesce((e.payload->>'DELETED')::boolean, false) as deleted
        from flight_change c
        join msg_event e on e.flid = c.flid and e.state_version = c.state_version
       where c.msg_id = ${id} and (e.target = 'schd' or e.payload->>'MSG_ID' = ${String(id)})
       order by e.event_id`.execute(d.db),
  ]);
  const p = ps.rows[0];
  const backfill = !p
    ? null
    : {
        status: p.backfill_at ? 'WRITTEN' : p.backfill_abandoned_at ? 'ABANDONED' : ['SUCCEEDED', 'SKIPPED', 'DEAD'].includes(p.state) ? 'OWED' : 'NOT_YET',
        at: iso(p.backfill_at, tz),
        nextAt: iso(p.backfill_next_at, tz),
        attempts: Number(p.backfill_attempts),
        abandonedAt: iso(p.backfill_abandoned_at, tz),
        abandonedReason: p.backfill_abandoned_reason ?? null,
      };
  return {
    msgId: id,
    found: !!p || inbox.present === true,
    timeZone: tz,
    inbox,
    identity: p?.identity_key ?? null,
    state: p
      ? {
          state: p.state as string,
          reason: (p.reason as string | null) ?? null,
          errorClass: (p.error_class as string | null) ?? null,
          kind: (p.kind as string | null) ?? null,
          attempts: Number(p.attempts),
          failuresInRow: Number(p.failures_in_row),
          failingSince: iso(p.failing_since, tz),
          nextAttemptAt: iso(p.next_attempt_at, tz),
          received: localWall(p.received_local, tz),
          enqueuedAt: iso(p.enqueued_at, tz),
          terminalAt: iso(p.terminal_at, tz),
          appliedState: (p.applied_state as string | null) ?? null,
          appliedReason: (p.applied_reason as string | null) ?? null,
        }
      : null,
    attempts: attempts.rows.map((a) => ({ at: iso(a.attempt_at, tz), errorClass: a.error_class as string, detail: (a.detail as string | null) ?? null, nextState: a.next_state as string })),
    flights: changes.rows.map((r) => changeView(r, tz)),
    events: events.rows.map((e) => ({
      eventId: Number(e.event_id),
      target: e.target as 'msg' | 'schd',
      topic: e.target === 'msg' ? d.topics.msg : d.topics.schd,
      flid: e.flid as string,
      stateVersion: Number(e.state_version),
      tombstone: e.deleted as boolean,
      state: e.state as string,
      attempts: Number(e.attempts),
      createdAt: iso(e.created_at, tz),
      sentAt: iso(e.sent_at, tz),
      partition: e.kafka_partition === null ? null : Number(e.kafka_partition),
      offset: (e.kafka_offset as string | null) ?? null,
      lastError: (e.last_error as string | null) ?? null,
    })),
    backfill,
  };
}

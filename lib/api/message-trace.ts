// "What happened to message 1234?": one read of everything recorded about one inbox
// message — its inbox row (received, processed time written back), identity, every failed
// attempt (PROC_ATTEMPT), terminal state and reason, the flights it changed with the fields
// before -> after (FLIGHT_CHANGE), the outbox events of those versions with topic, partition and
// offset once sent (MSG_EVENT), and its backfill. Read-only; every time is ISO-8601 in the
// airport's zone with its offset.
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import * as TraceSql from '../sql/trace.ts';
import { withTimeout } from '../core/timeout.ts';
import { changeView, iso, localWall } from '../flight/timeline.ts';
import { formatLocalDatetime } from '../sis/values.ts';
import { traceIdOf, traceLink } from '../runtime/tracing.ts';

export interface TraceDeps {
  db: Db;
  inbox: Inbox;
  timeZone: string;
  topics: { msg: string; schd: string };
  ioTimeoutMs: number;
  /** msgx.tracing.link: the trace backend's page of a trace, {traceId} replaced ('' or absent: no link). */
  traceLink?: string;
}

async function inboxRow(d: TraceDeps, id: number) {
  try {
    const rows = await withTimeout(d.ioTimeoutMs, 'inbox trace read', TraceSql.readInboxRow(d.inbox, id));
    const r = rows[0];
    if (!r) return { present: false as const };
    return {
      present: true as const,
      received: localWall(r.received, d.timeZone),
      processed: localWall(r.processed, d.timeZone),
      /** As stored (zone-less wall time, seconds): compared with this outcome's processing time. */
      processedRaw: r.processed ? String(r.processed).slice(0, 19).replace('T', ' ') : null,
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
    TraceSql.readMessageState(d.db, id),
    TraceSql.readMessageAttempts(d.db, id),
    TraceSql.readFlightChanges(d.db, id),
    TraceSql.readOutboxEvents(d.db, id, String(id)),
  ]);
  const p = ps[0];
  // After a replay the inbox keeps the processing time of the first outcome (never overwritten,
  // docs/decisions.md): the backfill of the new outcome found it "already marked" with an
  // earlier time than its own.
  const inboxValue = inbox.present === true ? inbox.processed : null;
  const processedRaw = inbox.present === true ? inbox.processedRaw : null;
  if (inbox.present === true) delete (inbox as { processedRaw?: string | null }).processedRaw; // not part of the answer
  const keptEarlier = !!p?.backfill_at && !!processedRaw && !!p.terminal_at && processedRaw < formatLocalDatetime(p.terminal_at, tz); // same wall-time format: ordered as text
  const backfill = !p
    ? null
    : {
        status: keptEarlier ? 'KEPT_EARLIER' : p.backfill_at ? 'WRITTEN' : p.backfill_abandoned_at ? 'ABANDONED' : ['SUCCEEDED', 'SKIPPED', 'DEAD'].includes(p.state) ? 'OWED' : 'NOT_YET',
        at: iso(p.backfill_at, tz),
        inboxValue,
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
    // the message's trace (docs/operations.md "Tracing") and its page at the trace backend
    traceId: traceIdOf(p?.trace_context),
    traceUrl: traceLink(d.traceLink ?? '', traceIdOf(p?.trace_context)),
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
    attempts: attempts.map((a) => ({ at: iso(a.attempt_at, tz), errorClass: a.error_class as string, detail: (a.detail as string | null) ?? null, nextState: a.next_state as string })),
    flights: changes.map((r) => changeView(r, tz)),
    events: events.map((e) => ({
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
      heldBy: e.held_by === null ? null : Number(e.held_by),
    })),
    backfill,
  };
}

// SQL of MSG_EVENT (the outbox of both dispatchers). Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/api/console.ts

/** The first $1 dead-lettered outbox events, in event order (console). */
export const consoleDeadLetters = pgStatement<
  [limit: number],
  { event_id: number; target: 'msg' | 'schd'; flid: string; state_version: number; attempts: number; last_error: string | null; created_at: Date }
>(
  'outbox.console_dead_letters',
  `select event_id, target, flid, state_version, attempts, last_error, created_at from msg_event
    where state = 'DEAD' order by event_id limit $1`,
);

/** PENDING outbox events per target (console). */
export const consolePendingByTarget = pgStatement<[], { target: string; n: number }>(
  'outbox.console_pending_by_target',
  `select target, count(*)::int n from msg_event where state = 'PENDING' group by target order by target`,
);

// ---- lib/api/console-data.ts

/** Outbox events PENDING now or sent since $1 (the last hour series of the console). */
export const lastHourEvents = pgStatement<[from: Date], { state: string; created_at: Date; sent_at: Date | null }>(
  'outbox.last_hour_events',
  `select state, created_at, sent_at from msg_event where state = 'PENDING'
   union all
   select state, created_at, sent_at from msg_event where state = 'SENT' and sent_at >= $1::timestamptz and target in ('msg', 'schd')`,
);

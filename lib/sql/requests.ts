// SQL of REQ_TRACK (outbound requests to the AODB, G-REQ-TRACK) and its SEQN sequence.
// Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/api/console.ts

/** The open (PENDING/SENT) requests, oldest first (console). */
export const consoleOpenRequests = pgStatement<
  [],
  { id: number; kind: 'RQRD' | 'RQFD'; rtype: string | null; operation_day: string | null; state: 'PENDING' | 'SENT'; created_at: Date; sent_at: Date | null }
>(
  'requests.console_open_requests',
  `select id, kind, rtype, operation_day::text as operation_day, state, created_at, sent_at from req_track
    where state in ('PENDING','SENT') order by id`,
);

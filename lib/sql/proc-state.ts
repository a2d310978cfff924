// SQL of PROC_STATE, PROC_ATTEMPT and INTAKE_CURSOR. Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/lifecycle/inbox.ts

/**
 * Inbox retention candidates: messages after $1 in a terminal state of $2 whose backfill
 * mark (BACKFILL_AT) was written before $3, ascending, at most $4.
 */
export const inboxPurgeCandidates = pgStatement<[after: number, terminal: readonly string[], cutoff: Date, limit: number], { msg_id: number }>(
  'proc_state.inbox_purge_candidates',
  `select msg_id from proc_state
    where msg_id > $1::bigint and state = any($2::text[]) and backfill_at is not null and backfill_at < $3::timestamptz
    order by msg_id limit $4::int`,
);

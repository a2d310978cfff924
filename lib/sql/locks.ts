// SQL of advisory locks. Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/lifecycle/flights.ts

/** Takes the session-level advisory lock $1 if free (the history purge leader): ok = taken. */
export const tryPurgeLeader = pgStatement<[key: number], { ok: boolean }>('locks.try_purge_leader', 'select pg_try_advisory_lock($1::bigint) as ok');

/** Releases the session-level advisory lock $1 (the history purge leader). */
export const unlockPurgeLeader = pgStatement<[key: number], { ok: boolean }>('locks.unlock_purge_leader', 'select pg_advisory_unlock($1::bigint) as ok');

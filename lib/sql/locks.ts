// SQL of advisory locks. Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/dispatch/outbox.ts

/** Takes the transaction-scoped advisory lock $1 if free (a dispatcher's round lock): ok = taken. */
export const tryRoundXactLock = pgStatement<[key: number], { ok: boolean }>('locks.try_round_xact_lock', 'select pg_try_advisory_xact_lock($1::bigint) as ok');

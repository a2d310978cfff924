// SQL of advisory locks. Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/requests/outbound.ts

/** Waits for the transaction-scoped two-key advisory lock ($1 class, $2 key): creating a request of a kind. */
export const requestCreateXactLock = pgStatement<[lockClass: number, key: number]>('locks.request_create_xact_lock', 'select pg_advisory_xact_lock($1::int, $2::int)');

/** Waits for the session-level two-key advisory lock ($1 class, $2 key): the one request sender. */
export const requestSenderLock = pgStatement<[lockClass: number, key: number]>('locks.request_sender_lock', 'select pg_advisory_lock($1::int, $2::int)');

/** Releases the request sender's session-level two-key advisory lock. */
export const requestSenderUnlock = pgStatement<[lockClass: number, key: number]>('locks.request_sender_unlock', 'select pg_advisory_unlock($1::int, $2::int)');

// ---- lib/lifecycle/inbox.ts

/** Waits for the lifecycle gate $1 (transaction-scoped) before the inbox purge reads its evidence. */
export const inboxPurgeGate = pgStatement<[key: number]>('locks.inbox_purge_gate', 'select pg_advisory_xact_lock($1::bigint)');

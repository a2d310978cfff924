// Health probes: `select 1` on Postgres and on MariaDB (the inbox). Statement conventions: lib/db/statement.ts.
import { myStatement, pgStatement } from '../db/statement.ts';

/** Postgres answers (a probe, a leader's heartbeat, /healthz). */
export const select1 = pgStatement<[], { '?column?': number }>('probe.select_1', 'select 1');

/** MariaDB answers (the inbox probe). */
export const mySelect1 = myStatement<[], { '1': number }>('probe.my_select_1', 'SELECT 1');

/**
 * The server's view of some backends (lib/runtime/pool-watch.ts): a pooled connection whose
 * call has waited for seconds while its backend is idle (or gone, or blocked writing to the
 * client) is stuck on a dead path, not busy.
 */
export const backendStates = pgStatement<[pids: number[]], { pid: number; state: string | null; wait_event: string | null }>(
  'probe.backend_states',
  'select pid, state, wait_event from pg_stat_activity where pid = any($1::int[])',
);

/** Whether the server runs autovacuum (lib/runtime/server-settings.ts): 'on' / 'off'. */
export const autovacuum = pgStatement<[], { autovacuum: string }>('probe.autovacuum', "select current_setting('autovacuum') as autovacuum");

// Health probes: `select 1` on Postgres and on MariaDB (the inbox). Statement conventions: lib/db/statement.ts.
import { type Executor, type MyExecutor, myRows, myStatement, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

const select1Statement = pgStatement<[], { '?column?': number }>('probe.select_1', 'select 1');
/** Postgres answers (a probe, a leader's heartbeat, /healthz). */
export function select1(db: Executor): Promise<number> {
  return pgRun(db, select1Statement);
}

const mySelect1Statement = myStatement<[], { '1': number }>('probe.my_select_1', 'SELECT 1');
/** MariaDB answers (the inbox probe). */
export function mySelect1(my: MyExecutor): Promise<RowOf<typeof mySelect1Statement>[]> {
  return myRows(my, mySelect1Statement);
}

const backendStatesStatement = pgStatement<[pids: number[]], { pid: number; state: string | null; wait_event: string | null }>(
  'probe.backend_states',
  'select pid, state, wait_event from pg_stat_activity where pid = any($1::int[])',
);
/**
 * The server's view of some backends (lib/runtime/pool-watch.ts): a pooled connection whose
 * call has waited for seconds while its backend is idle (or gone, or blocked writing to the
 * client) is stuck on a dead path, not busy.
 */
export function readBackendStates(db: Executor, pids: number[]): Promise<RowOf<typeof backendStatesStatement>[]> {
  return pgRows(db, backendStatesStatement, pids);
}

const autovacuumStatement = pgStatement<[], { autovacuum: string }>('probe.autovacuum', "select current_setting('autovacuum') as autovacuum");
/** Whether the server runs autovacuum (lib/runtime/server-settings.ts): 'on' / 'off'. */
export function readAutovacuum(db: Executor): Promise<RowOf<typeof autovacuumStatement> | undefined> {
  return pgOne(db, autovacuumStatement);
}

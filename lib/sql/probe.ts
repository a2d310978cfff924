// Health probes: `select 1` on Postgres and on MariaDB (the inbox). Statement conventions: lib/db/statement.ts.
import { myStatement, pgStatement } from '../db/statement.ts';

/** Postgres answers (a probe, a leader's heartbeat, /healthz). */
export const select1 = pgStatement<[], { '?column?': number }>('probe.select_1', 'select 1');

/** MariaDB answers (the inbox probe). */
export const mySelect1 = myStatement<[], { '1': number }>('probe.my_select_1', 'SELECT 1');

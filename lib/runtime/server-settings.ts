// Server settings the gateway depends on but does not own (docs/operations.md "Production
// topology"), read once at start: Postgres with autovacuum = off is a misconfiguration (the
// pump's rate falls as retention's dead rows pile up). Named by one WARN line, the gauge
// msgx_postgres_autovacuum and a /healthz note; readiness does not depend on it.
import type { Db } from '../db/postgres.ts';
import * as Probe from '../sql/probe.ts';
import { setNote } from './conditions.ts';
import { withDeadline } from './leader.ts';
import type { Logger } from './log.ts';
import { metrics } from './metrics.ts';

export const AUTOVACUUM_OFF = 'postgres-autovacuum-off';

/** Reads autovacuum once; false when it is off (a failure to read it is not a finding: the outage is reported elsewhere). */
export async function checkAutovacuum(db: Db, log: Logger, timeoutMs: number): Promise<boolean | null> {
  const row = await withDeadline(Probe.readAutovacuum(db), timeoutMs, 'postgres autovacuum setting').catch(() => undefined);
  if (!row) return null;
  const on = row.autovacuum === 'on';
  metrics.postgresAutovacuum.set(on ? 1 : 0);
  if (!on) {
    const reason = 'Postgres runs with autovacuum = off: dead rows pile up and the pump slows down; set autovacuum = on (docs/operations.md "Production topology")';
    setNote(AUTOVACUUM_OFF, reason);
    log.warn({ setting: 'autovacuum', value: row.autovacuum }, reason);
  }
  return on;
}

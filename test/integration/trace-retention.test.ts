// Retention of the trace records in the retention process's run: FLIGHT_CHANGE after
// msgx.pipeline.event-retention (edge to the second), PROC_ATTEMPT with its PROC_STATE row.
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { connectClient } from '../../lib/db/postgres.ts';
import { createQuerySessionDb, type QueryDb } from '../../lib/db/kysely.ts';
import { retentionSettings, type RetentionDeps } from '../../lib/lifecycle/common.ts';
import { runRetention } from '../../lib/lifecycle/tasks.ts';
import { purgeAttempts, purgeFlightChanges } from '../../lib/lifecycle/trace-records.ts';
import { metrics } from '../../lib/runtime/metrics.ts';
import { testConfig, TEST_PG_URL } from '../support/env.ts';
import { openServices, resetDomain, resetPipeline, silentLog, type TestServices } from '../support/services.ts';

const DAY = 86_400_000;
let s: TestServices;
let purgeClient: pg.Client;
let purgeSession: { db: QueryDb };

beforeAll(async () => {
  s = await openServices();
  purgeClient = await connectClient(TEST_PG_URL, 'test-purge');
  purgeSession = { db: createQuerySessionDb(purgeClient) };
});
afterAll(async () => {
  await purgeClient.end().catch(() => {});
  await s.close();
});
beforeEach(async () => {
  await resetPipeline(s);
  await resetDomain(s);
});

const deps = (clock: ManualClock, overrides: Record<string, string> = {}): RetentionDeps => ({
  db: s.db,
  inbox: s.inbox,
  redis: s.redis,
  clock,
  ...retentionSettings(testConfig(overrides)),
  log: silentLog,
});
const deleted = async (object: string) => (await metrics.retentionDeleted.get()).values.find((v) => v.labels.object === object)?.value ?? 0;

async function change(flid: string, v: number, msgId: number, at: Date) {
  await sql`insert into flight_change (flid, state_version, msg_id, kind, op, cause, changes, created_at)
            values (${flid}, ${v}, ${msgId}, 'FLOP/GATE', 'UPDATE', 'MESSAGE', '{"GATE": [null, "21"]}'::jsonb, ${at})`.execute(s.db);
}
async function attempt(msgId: number, at: Date) {
  await sql`insert into proc_attempt (msg_id, attempt_at, error_class, detail, next_state) values (${msgId}, ${at}, 'INTERNAL', 'boom', 'FAILED')`.execute(s.db);
}
const rows = async (q: string) => (await sql.raw<{ k: string }>(q).execute(s.db)).rows.map((r) => r.k);

describe('trace records retention', () => {
  it('FLIGHT_CHANGE rows go after msgx.pipeline.event-retention by CREATED_AT; the edge stays', async () => {
    const clock = new ManualClock('2026-12-10T00:00:00Z');
    const now = clock.now().getTime();
    await change('1', 1, 10, new Date(now - 7 * DAY - 1000)); // older than 7 d: goes
    await change('1', 2, 11, new Date(now - 7 * DAY)); // exactly 7 d: stays
    await change('2', 1, 12, new Date(now - DAY)); // stays
    const before = await deleted('flight_change');
    expect(await purgeFlightChanges(deps(clock), { batch: 1 })).toBe(1);
    expect(await rows(`select flid || 'v' || state_version as k from flight_change order by 1`)).toEqual(['1v2', '2v1']);
    expect((await deleted('flight_change')) - before).toBe(1);
    // a shorter retention (documented key) takes more; batches loop until a short one
    expect(await purgeFlightChanges(deps(clock, { 'msgx.pipeline.event-retention': '1h' }), { batch: 1 })).toBe(2);
    expect(await rows(`select flid as k from flight_change`)).toEqual([]);
  });

  it('PROC_ATTEMPT rows go with their PROC_STATE row, never before it', async () => {
    const clock = new ManualClock('2026-12-10T00:00:00Z');
    const old = new Date(clock.now().getTime() - 400 * DAY);
    await sql`insert into proc_state (msg_id, state, enqueued_at, updated_at, terminal_at) values (20, 'DEAD', ${old}, ${old}, ${old})`.execute(s.db);
    await attempt(20, old); // its message is still there (however old the attempt): stays
    await attempt(21, old); // its message was purged: goes
    await attempt(21, clock.now());
    expect(await purgeAttempts(deps(clock))).toBe(2);
    expect(await rows(`select msg_id::text as k from proc_attempt`)).toEqual(['20']);
  });

  it('the retention run includes both jobs, after PROC_STATE (a message purged in that run takes its attempts)', async () => {
    const clock = new ManualClock('2026-12-10T00:00:00Z');
    const old = new Date(clock.now().getTime() - 40 * DAY);
    // terminal, backfilled, older than msgx.proc-state.retention (30 d), inbox row gone: purged in this run
    await sql`insert into proc_state (msg_id, state, enqueued_at, updated_at, terminal_at, backfill_at) values (30, 'SUCCEEDED', ${old}, ${old}, ${old}, ${old})`.execute(s.db);
    await attempt(30, old);
    await change('3', 1, 30, old);
    const r = await runRetention(deps(clock), async () => ({ ...purgeSession, close: async () => {} }));
    expect(r.report).toMatchObject({ proc_state: 1, flight_change: 1, proc_attempt: 1 });
    expect(await rows(`select msg_id::text as k from proc_attempt`)).toEqual([]);
  });
});

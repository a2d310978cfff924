// The flight domain under the real pump process: a 9,999-flight snapshot is atomic even when the
// pump is killed mid-way; after a restart it is applied exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { LOCKS } from '../../lib/db/postgres.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';
import { hasLog, startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';

let s: TestServices;
const procs: Proc[] = [];
const start = (name: string) => {
  const p = startWorker(name);
  procs.push(p);
  return p;
};
const flights = async () => (await sql<{ n: number }>`select count(*)::int n from flight_schd`.execute(s.db)).rows[0].n;

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
});
afterAll(async () => {
  await stopAll(procs);
  await s.close();
});

describe('9,999-flight snapshot under the pump process', () => {
  it('kill -9 mid-way leaves nothing visible; after restart it is applied once, with one event per flight', async () => {
    await putInbox(s.inbox, bigSnapshot(9999));
    start('intake');
    let pump = start('pump');
    // PIPELINE_LOCK (advisory 7001) is held from the raw read to the terminal commit
    await waitFor(
      'the pump is processing the snapshot',
      async () => {
        const r = await sql<{
          n: number;
        }>`select count(*)::int n from pg_locks where locktype = 'advisory' and objid = ${LOCKS.PIPELINE} and granted and database = (select oid from pg_database where datname = current_database())`.execute(
          s.db,
        );
        return r.rows[0].n > 0;
      },
      30_000,
      20,
    );
    // … and inside the business transaction once it has written (an xid is assigned at the first write)
    await waitFor(
      'the business transaction has written',
      async () => {
        const r = await sql<{ n: number }>`select count(*)::int n from pg_stat_activity where application_name = 'msgx-pump' and backend_xid is not null and datname = current_database()`.execute(
          s.db,
        );
        return r.rows[0].n > 0;
      },
      30_000,
      10,
    );
    pump.child.kill('SIGKILL');
    await pump.exited;
    expect(await flights()).toBe(0); // the transaction died with the process: nothing visible
    expect((await procRows(s.db))[0].state).toBe('PENDING');
    pump = start('pump');
    await waitFor('snapshot applied', async () => (await procRows(s.db))[0]?.state === 'SUCCEEDED', 60_000, 200);
    expect(hasLog(pump, 'snapshot applied')).toBe(true);
    expect(await flights()).toBe(9999);
    const ev = await sql<{ target: string; n: number }>`select target, count(*)::int n from msg_event group by 1 order by 1`.execute(s.db);
    expect(ev.rows).toEqual([
      { target: 'msg', n: 9999 },
      { target: 'schd', n: 9999 },
      { target: 'state', n: 9999 },
    ]);
    const versions = await sql<{ v: number; n: number }>`select state_version v, count(*)::int n from flight_schd group by 1`.execute(s.db);
    expect(versions.rows).toEqual([{ v: 1, n: 9999 }]);
    expect(await s.redis.exists('msgx:flight:1', 'msgx:flight:9999')).toBe(2);
  });
});

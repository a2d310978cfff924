// wakeAll (lib/sql/jobs.ts): one statement for several graphile-worker wake-ups,
// through msgx_wake, which calls graphile-worker's public add_jobs (job_key = task name). A pending job of that key
// is replaced — its row is locked until the waking transaction commits, so no worker can start it
// before the writes it must see. A wake-up is never lost: a running job, a job scheduled later or
// no job at all → a job that has not started before the commit.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { wakeAll } from '../../../lib/sql/jobs.ts';
import { markAppliedTerminal } from '../../../lib/sql/transitions.ts';
import { TASK } from '../../../lib/core/tasks.ts';
import { openServices, type TestServices } from '../../support/services.ts';
import { TEST_PG_URL } from '../../support/env.ts';
import { waitFor } from '../../support/processes.ts';

const A = 'msgx-test-wake-a';
const B = 'msgx-test-wake-b';
let s: TestServices;

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => {
  await sql`delete from graphile_worker._private_jobs where key in (${A}, ${B}) or task_id in (select id from graphile_worker._private_tasks where identifier in (${A}, ${B}))`.execute(s.db);
  await s.close();
});
beforeEach(async () => {
  await sql`delete from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier in (${A}, ${B}))`.execute(s.db);
});

type Job = { id: number; key: string | null; revision: number; locked_at: Date | null; run_at: Date; attempts: number };
async function jobs(task: string): Promise<Job[]> {
  const r = await sql<Job>`select id, key, revision, locked_at, run_at, attempts from graphile_worker.jobs where task_identifier = ${task} order by id`.execute(s.db);
  return r.rows;
}

describe('wakeAll', () => {
  it('adds a job per task when none exists (one statement for several)', async () => {
    await s.db.transaction().execute((tx) => wakeAll(tx, [A, B, A]));
    expect(await jobs(A)).toMatchObject([{ key: A, revision: 0 }]);
    expect(await jobs(B)).toMatchObject([{ key: B, revision: 0 }]);
  });

  it('a pending job is replaced (one job per key) and locked until the waking transaction commits', async () => {
    await wakeAll(s.db, [A]);
    const [before] = await jobs(A);
    await s.db.transaction().execute(async (tx) => {
      await wakeAll(tx, [A]);
      // a worker fetching jobs (FOR UPDATE SKIP LOCKED) cannot take it before the commit
      const seen = await s.pool.query(`select id from graphile_worker._private_jobs where key = $1 for update skip locked`, [A]);
      expect(seen.rowCount).toBe(0);
    });
    const after = await jobs(A);
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: before.id, key: A, revision: before.revision + 1, locked_at: null });
    const seen = await s.pool.query(`select id from graphile_worker._private_jobs where key = $1 for update skip locked`, [A]);
    expect(seen.rowCount).toBe(1);
  });

  it('a job already running (locked by a worker) gets a new job: the running one may not see the new writes', async () => {
    await wakeAll(s.db, [A]);
    await sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'w1' where key = ${A}`.execute(s.db);
    await s.db.transaction().execute((tx) => wakeAll(tx, [A]));
    const all = await jobs(A);
    expect(all).toHaveLength(2);
    expect(all[0]).toMatchObject({ key: null });
    expect(all[1]).toMatchObject({ key: A, locked_at: null });
  });

  it('a job scheduled later (e.g. a backoff) is brought forward, as add_job would', async () => {
    await wakeAll(s.db, [A]);
    await sql`update graphile_worker._private_jobs set run_at = now() + interval '1 hour' where key = ${A}`.execute(s.db);
    await wakeAll(s.db, [A]);
    const [j] = await jobs(A);
    expect(j.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(j.revision).toBe(1);
  });

  it('a job out of attempts gets a fresh job (as add_job does)', async () => {
    await wakeAll(s.db, [A]);
    await sql`update graphile_worker._private_jobs set attempts = max_attempts where key = ${A}`.execute(s.db);
    await wakeAll(s.db, [A]);
    expect(await jobs(A)).toMatchObject([{ key: null }, { key: A, attempts: 0, locked_at: null }]);
  });

  it('a waiting job that a worker locks while the wake-up runs: graphile-worker alone drops the wake-up; msgx_wake calls again', async () => {
    const waker = new pg.Client({ connectionString: TEST_PG_URL });
    const worker = new pg.Client({ connectionString: TEST_PG_URL });
    await Promise.all([waker.connect(), worker.connect()]);
    const wakerPid = (await waker.query<{ pid: number }>('select pg_backend_pid() pid')).rows[0].pid;
    const race = async (wakeSql: string) => {
      await sql`delete from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = ${A})`.execute(s.db);
      await wakeAll(s.db, [A]); // waiting
      // a worker takes the job (its get_job) after add_jobs cleared no key, before its insert
      await worker.query('begin');
      await worker.query(`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'w1' where key = $1`, [A]);
      const woken = waker.query<{ id: string | null }>(wakeSql, [A]);
      await waitFor(
        'the wake-up waits for the worker',
        async () => (await s.pool.query(`select 1 from pg_stat_activity where pid = $1 and wait_event_type = 'Lock'`, [wakerPid])).rowCount === 1,
        5000,
        20,
      );
      await worker.query('commit');
      const { id } = (await woken).rows[0];
      return { id, jobs: (await jobs(A)).map((j) => ({ key: j.key, locked: j.locked_at !== null })) };
    };
    try {
      // add_job: no row; only the running job, about to end, holds the key
      expect(await race(`select (graphile_worker.add_job($1::text, '{}'::json, job_key := $1::text)).id::text as id`)).toEqual({ id: null, jobs: [{ key: A, locked: true }] });
      // msgx_wake: the running job lets go of the key, a new job waits behind it
      expect(await race('select msgx_wake(array[$1::text])::text as id')).toEqual({
        id: '1',
        jobs: [
          { key: null, locked: true },
          { key: A, locked: false },
        ],
      });
    } finally {
      await worker.query('rollback').catch(() => {});
      await Promise.all([waker.end(), worker.end()]);
    }
  });

  it('a terminal statement over many messages wakes backfill once (its wake-up is an init plan, not a call per row)', async () => {
    const ids = [990_001, 990_002, 990_003];
    const clear = async () => {
      await sql`delete from proc_state where msg_id = any(${ids}::bigint[])`.execute(s.db);
      await sql`delete from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = ${TASK.backfill})`.execute(s.db);
    };
    await clear();
    try {
      await wakeAll(s.db, [TASK.backfill]);
      const [before] = await jobs(TASK.backfill);
      await sql`insert into proc_state (msg_id, enqueued_at, updated_at, applied_state) select unnest(${ids}::bigint[]), now(), now(), 'SUCCEEDED'`.execute(s.db);
      expect((await markAppliedTerminal(s.db, ids, new Date())).map((r) => r.state)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
      // one add_jobs on the waiting job: its revision goes up by one, not by the number of rows
      expect((await jobs(TASK.backfill)).map((j) => ({ id: j.id, revision: j.revision }))).toEqual([{ id: before.id, revision: before.revision + 1 }]);
    } finally {
      await clear();
    }
  });
});

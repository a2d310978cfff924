// SQL of graphile-worker's queue (graphile_worker.*): wake-ups and job queue reads. Statement
// conventions: lib/db/statement.ts. Wake-ups that ride inside a PROC_STATE transition's statement
// are in lib/sql/transitions.ts (WAKE).
import { type Executor, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

// ---- wake-ups

/**
 * Wakes the tasks of $1 with one statement: `msgx_wake` (sql/migrations/0980_wake.sql), one
 * graphile-worker job per task with job_key = task name. A job of that key that is waiting is
 * replaced (run now); one that is running keeps running and a new one is queued behind it
 * (graphile-worker clears the running job's key); one locked while the wake-up runs is seen on a
 * second call — a wake-up is never lost (docs/decisions.md "Duties").
 */
const wakeAllStatement = pgStatement<[tasks: string[]], { woken: number }>('jobs.wake_all', 'select msgx_wake($1::text[]) as woken');

/** Wakes task $1 (coalesced by job_key = task name), at $2 (null: now). */
const wakeStatement = pgStatement<[task: string, runAt: Date | null]>('jobs.wake', 'select msgx_wake(array[$1::text], $2::timestamptz) as woken');

/** Wakes several graphile-worker tasks with one statement (nothing when the list is empty). */
export async function wakeAll(db: Executor, tasks: Iterable<string>): Promise<void> {
  const list = [...new Set(tasks)];
  if (list.length === 0) return;
  await pgRun(db, wakeAllStatement, list);
}

/** Wakes a graphile-worker task (coalesced by job_key), at `runAt` (default now); inside the caller's transaction when `db` is one. */
export async function wake(db: Executor, task: string, runAt?: Date): Promise<void> {
  await pgRun(db, wakeStatement, task, runAt ?? null);
}

// ---- the duties' jobs (lib/runtime/job-queue.ts)

const keepDutiesAliveStatement = pgStatement<[tasks: string[], staleLockMs: number], { task: string; id: number }>(
  'jobs.keep_duties_alive',
  `select t as task, (graphile_worker.add_job(t, '{}'::json, job_key := t)).id as id
     from unnest($1::text[]) as t
    where not exists (
      select 1 from graphile_worker.jobs j
       where j.key = t
         and (j.locked_at > now() - $2::float8 * interval '1 millisecond' or (j.locked_at is null and j.attempts < j.max_attempts)))`,
);
/**
 * Adds the job of each duty of $1 that has none running or waiting (attempts left); running =
 * locked less than $2 ms ago. Returns the duties that got a job.
 */
export function keepDutiesAlive(db: Executor, tasks: string[], staleLockMs: number): Promise<RowOf<typeof keepDutiesAliveStatement>[]> {
  return pgRows(db, keepDutiesAliveStatement, tasks, staleLockMs);
}

const lockingWorkersStatement = pgStatement<[tasks: string[]], { locked_by: string }>(
  'jobs.locking_workers',
  'select distinct locked_by from graphile_worker.jobs where task_identifier = any($1::text[]) and locked_by is not null',
);
/** The workers that hold a lock on a job of the tasks $1. */
export function listLockingWorkers(db: Executor, tasks: string[]): Promise<RowOf<typeof lockingWorkersStatement>[]> {
  return pgRows(db, lockingWorkersStatement, tasks);
}

const forceUnlockWorkersStatement = pgStatement<[workers: string[]]>('jobs.force_unlock_workers', 'select graphile_worker.force_unlock_workers($1::text[])');
/** Releases the jobs locked by the workers $1 (workers that are gone). */
export function forceUnlockWorkers(db: Executor, workers: string[]): Promise<number> {
  return pgRun(db, forceUnlockWorkersStatement, workers);
}

// ---- lib/requests/outbound.ts

const addRequestJobStatement = pgStatement<[task: string, id: number]>('jobs.add_request_job', `select graphile_worker.add_job($1::text, json_build_object('id', $2::bigint))`);
/** Queues task $1 with payload {id: $2} (the `request` job of a new request, in its transaction). */
export function addRequestJob(db: Executor, task: string, id: number): Promise<number> {
  return pgRun(db, addRequestJobStatement, task, id);
}

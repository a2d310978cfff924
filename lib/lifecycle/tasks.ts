// The retention process's graphile-worker task and crontab (docs/lifecycle.md). One task runs every
// job in order; each job has its own time budget, and a run cut short by a budget schedules the
// next run at once (job_key: a burst coalesces). msgx.retention.schedule is the crontab.
//
// The jobs, one file per purged object, each deleting in bounded batches with its final evidence,
// each returning the number of rows deleted and counting them in msgx_retention_deleted_total{object}.
// When the evidence is unclear, nothing is deleted (D1). Shared pieces: common.ts.
//
//   object          file            evidence (all times from the injected clock)
//   cminmsgs        inbox.ts        PROC_STATE terminal, BACKFILL_AT set and older than R_keep, inbox row marked (C-1)
//   proc_state      proc-state.ts   terminal, BACKFILL_AT set, UPDATED_AT older than the retention, inbox row gone
//   flight_schd     flights.ts      history rule re-checked under PIPELINE_LOCK with the version read, history
//                                   row written in the same transaction (D1)
//   flight_history  history.ts      ARCHIVED_AT older than msgx.history.retention
//   schd_snap_log   snap-log.ts     receive time and scope end (operation day) older than msgx.snap-log.retention
//   req_track       requests.ts     closed longer than msgx.req-track.retention
//   access_audit    access-audit.ts recorded longer ago than msgx.audit.retention
//   schd_gen(_flid) ledger.ts       operation day older than purge-after and no roster flight of that day left
//   flight_change,  trace-records.ts  see there
//   proc_attempt
//
// The SENT outbox rows are msg-dispatch's job (lib/dispatch/retention.ts), not repeated here.
import { parseCrontab, type Task, type TaskList } from 'graphile-worker';
import { ConfigError, type Config } from '../core/config.ts';
import { RETENTION_TASK } from '../core/tasks.ts';
import type { PurgeSession, RetentionDeps } from './common.ts';
import { purgeFlights } from './flights.ts';
import { purgeHistory } from './history.ts';
import { purgeInbox } from './inbox.ts';
import { purgeLedger } from './ledger.ts';
import { purgeProcState } from './proc-state.ts';
import { purgeRequests } from './requests.ts';
import { purgeSnapLog } from './snap-log.ts';
import { purgeAttempts, purgeFlightChanges } from './trace-records.ts';
import { purgeAccessAudit } from './access-audit.ts';
import { TimeBudget } from '../core/budget.ts';
import { RETENTION } from '../core/tuning.ts';

const SCHEDULE_KEY = 'msgx.retention.schedule';
const NAMED: Record<string, string> = { hourly: '0 * * * *' };

/** msgx.retention.schedule → a 5-field cron expression; anything else is a ConfigError naming the key. */
export function retentionSchedule(config: Pick<Config, 'msgx.retention.schedule'>): string {
  const raw = config[SCHEDULE_KEY].trim();
  const expr = NAMED[raw] ?? raw;
  const bad = (why: string) => new ConfigError(`invalid configuration:\n  - ${SCHEDULE_KEY} (MSGX_RETENTION_SCHEDULE=${JSON.stringify(raw)}): ${why}`);
  if (expr.split(/\s+/).length !== 5) throw bad(`expected "hourly" or a 5-field cron expression (minute hour day month weekday), e.g. "15 * * * *"`);
  try {
    parseCrontab(`${expr} ${RETENTION_TASK}`);
  } catch (e) {
    throw bad((e as Error).message);
  }
  return expr;
}

/** The crontab line of the retention process (validated). */
export function retentionCrontab(config: Config): string {
  return `${retentionSchedule(config)} ${RETENTION_TASK} ?jobKey=${RETENTION_TASK}&max=1`;
}

/** What one run deleted, by object. */
export type RetentionReport = Record<string, number>;

export interface RunOptions {
  /** Wall-time budget per job (default 60 s). */
  jobBudgetMs?: number;
  batch?: number;
}

/**
 * Every job in order: the flight purge first (it empties the ledger's rosters), then the ledger,
 * history, logs, requests, and the inbox before PROC_STATE (whose rows are the inbox's evidence),
 * then the trace records (flight changes by age, attempts of purged messages).
 * A failing job does not stop the others; the run then throws, naming every failure.
 */
export async function runRetention(d: RetentionDeps, openSession: () => Promise<PurgeSession & { close(): Promise<void> }>, o: RunOptions = {}): Promise<{ report: RetentionReport; more: boolean }> {
  const report: RetentionReport = {};
  const failures: string[] = [];
  let more = false;
  const run = async (name: string, job: (b: TimeBudget) => Promise<number>) => {
    const budget = new TimeBudget(o.jobBudgetMs ?? RETENTION.jobBudgetMs);
    try {
      report[name] = await job(budget);
    } catch (e) {
      failures.push(`${name}: ${(e as Error).message}`);
      d.log.error({ err: e, job: name }, 'retention job failed; the next run retries');
    }
    if (budget.cut) more = true;
  };
  const session = await openSession();
  try {
    await run('flight_schd', (budget) => purgeFlights(d, session, { budget, batch: o.batch }));
    await run('schd_gen', (budget) => purgeLedger(d, session, { budget }));
  } finally {
    await session.close();
  }
  await run('flight_history', (budget) => purgeHistory(d, { budget, batch: o.batch }));
  await run('schd_snap_log', (budget) => purgeSnapLog(d, { budget, batch: o.batch }));
  await run('req_track', () => purgeRequests(d));
  await run('access_audit', (budget) => purgeAccessAudit(d, { budget, batch: o.batch }));
  await run('cminmsgs', (budget) => purgeInbox(d, { budget, batch: o.batch }));
  await run('proc_state', (budget) => purgeProcState(d, { budget, batch: o.batch }));
  await run('flight_change', (budget) => purgeFlightChanges(d, { budget, batch: o.batch }));
  await run('proc_attempt', (budget) => purgeAttempts(d, { budget, batch: o.batch })); // after proc_state: attempts go with their message
  d.log.info({ deleted: report, more }, 'retention run done');
  if (failures.length) throw new Error(`retention jobs failed: ${failures.join('; ')}`);
  return { report, more };
}

/** The task list of the retention process. */
export function retentionTasks(d: RetentionDeps, openSession: () => Promise<PurgeSession & { close(): Promise<void> }>, signal?: AbortSignal): TaskList {
  const task: Task = async (_payload, helpers) => {
    const { more } = await runRetention(d, openSession);
    if (more && !signal?.aborted) await helpers.addJob(RETENTION_TASK, {}, { jobKey: RETENTION_TASK });
  };
  return { [RETENTION_TASK]: task };
}

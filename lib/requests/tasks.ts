// graphile-worker wiring for requests (the lead adds these to the api/worker process).
//   task `request`: payload {id} → send pending requests; {type:'RQRD',rtype} |
//     {type:'RQFD',operationDay:'YYYY-MM-DD'|'tomorrow'} → create, then send. A request whose
//     insert outcome is unknown makes the job fail, so graphile-worker retries. One job = one
//     request: the request is created at the job's first attempt and recorded with the job
//     (REQ_TRACK.JOB_KEY); a retry finds it and reconciles it (sendPending looks for the row
//     of its exact body) instead of creating and sending another. 'tomorrow' is resolved
//     from the time the job was scheduled (crontab `_cron.ts`, else the job's creation), so a
//     retry after midnight still asks for the same day.
//   requestsCrontab(settings): the evening line requesting tomorrow's schedule (UTC, as
//     graphile-worker's cron runs in UTC), '' when msgx.requests.daily-schedule-at is empty.
import { TASK } from '../core/tasks.ts';
import type { Task } from 'graphile-worker';
import type { AirportConfig } from '../core/config.ts';
import { fromWallClock, operationDayOf, wallClock } from '../sis/values.ts';
import { nextDay, parseRequestSpec } from './message.ts';
import { createRequest, sendPending, type OutboundDeps, type RequestSettings, type SendResult } from './outbound.ts';

/** Resolve 'tomorrow' to the operation day after the one of `at` (airport zone, cutover). */
export function resolveRequestPayload(payload: unknown, airport: AirportConfig, at: Date): unknown {
  const p = (payload ?? {}) as Record<string, unknown>;
  if (p.type === 'RQFD' && p.operationDay === 'tomorrow') return { ...p, operationDay: nextDay(operationDayOf(at, airport.timezone, airport.dayCutover)) };
  return p;
}

/** The graphile-worker job running the task: its id (stable across retries) and when it was created. */
export interface RequestJob {
  id: string;
  createdAt: Date;
}

/** When the job was scheduled: the crontab's `_cron.ts`, else the job's creation, else now. */
export function scheduledAt(payload: unknown, job: RequestJob | undefined, now: Date): Date {
  const ts = ((payload ?? {}) as { _cron?: { ts?: unknown } })._cron?.ts;
  const cron = typeof ts === 'string' || ts instanceof Date ? new Date(ts) : undefined;
  if (cron && !Number.isNaN(cron.getTime())) return cron;
  return job?.createdAt ?? now;
}

/** What the `request` task does, without graphile-worker (CLI and tests use it too). */
export async function runRequestTask(deps: OutboundDeps, payload: unknown, job?: RequestJob): Promise<{ createdId?: number; results: SendResult[] }> {
  const p = resolveRequestPayload(payload, deps.airport, scheduledAt(payload, job, deps.clock.now())) as Record<string, unknown>;
  let createdId: number | undefined;
  if (p.type !== undefined) {
    const { _cron, ...fields } = p;
    const spec = parseRequestSpec(fields);
    if ('error' in spec) throw new Error(`request task: ${spec.error}`);
    const created = await createRequest(deps.db, { requests: deps.requests, airport: deps.airport, now: deps.clock.now(), spec, ...(job ? { jobKey: `job:${job.id}` } : {}) });
    createdId = created.request.id;
    if (created.existing) deps.log?.info({ requestId: createdId, job: job?.id }, 'request job retried: its request exists, reconciling it');
  }
  return { createdId, results: await sendPending(deps) };
}

export function requestTasks(deps: OutboundDeps): Record<typeof TASK.request, Task> {
  return {
    [TASK.request]: async (payload, helpers) => {
      const { results } = await runRequestTask(deps, payload, { id: String(helpers.job.id), createdAt: new Date(helpers.job.created_at) });
      const unknown = results.filter((r) => r.outcome === 'unknown');
      for (const r of results) helpers.logger.info(`request ${r.id}: ${r.outcome}`);
      if (unknown.length) throw new Error(`COUTMSGS insert not confirmed for request(s) ${unknown.map((r) => r.id).join(', ')}`);
    },
  };
}

export function requestsCrontab(s: RequestSettings, now: Date): string {
  const at = s.requests.dailyScheduleAt;
  if (!at || s.requests.readOnly) return ''; // a read-only (shadow) installation asks the AODB nothing
  const [h, m] = at.split(':').map(Number);
  const tz = s.airport.timezone;
  const w = wallClock(now, tz);
  const utc = fromWallClock(w.year, w.month, w.day, h, m, 0, tz);
  return `${utc.getUTCMinutes()} ${utc.getUTCHours()} * * * request {type:"RQFD",operationDay:"tomorrow"}`;
}

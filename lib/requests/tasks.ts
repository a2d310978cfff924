// graphile-worker wiring for requests (the lead adds these to the api/worker process).
//   task `request`: payload {id} → send pending requests; {type:'RQRD',rtype} |
//     {type:'RQFD',operationDay:'YYYY-MM-DD'|'tomorrow'} → create, then send. A request whose
//     insert outcome is unknown makes the job fail, so graphile-worker retries (and reconciles).
//   requestsCrontab(config): the evening line requesting tomorrow's schedule (UTC, as
//     graphile-worker's cron runs in UTC), '' when msgx.requests.daily-schedule-at is empty.
import type { Task } from 'graphile-worker';
import type { Config } from '../config.ts';
import { fromWallClock, operationDayOf, wallClock } from '../sis/values.ts';
import { nextDay, parseRequestSpec } from './message.ts';
import { createRequest, sendPending, type OutboundDeps, type SendResult } from './outbound.ts';

/** Resolve 'tomorrow' to the operation day after today's (airport zone, cutover). */
export function resolveRequestPayload(payload: unknown, config: Config, now: Date): unknown {
  const p = (payload ?? {}) as Record<string, unknown>;
  if (p.type === 'RQFD' && p.operationDay === 'tomorrow')
    return { ...p, operationDay: nextDay(operationDayOf(now, config['msgx.airport.timezone'], config['msgx.airport.day-cutover'])) };
  return p;
}

/** What the `request` task does, without graphile-worker (CLI and tests use it too). */
export async function runRequestTask(deps: OutboundDeps, payload: unknown): Promise<{ createdId?: number; results: SendResult[] }> {
  const p = resolveRequestPayload(payload, deps.config, deps.clock.now()) as Record<string, unknown>;
  let createdId: number | undefined;
  if (p.type !== undefined) {
    const spec = parseRequestSpec(p);
    if ('error' in spec) throw new Error(`request task: ${spec.error}`);
    createdId = (await createRequest(deps.db, { config: deps.config, now: deps.clock.now(), spec })).request.id;
  }
  return { createdId, results: await sendPending(deps) };
}

export function requestTasks(deps: OutboundDeps): Record<'request', Task> {
  return {
    request: async (payload, helpers) => {
      const { results } = await runRequestTask(deps, payload);
      const unknown = results.filter((r) => r.outcome === 'unknown');
      for (const r of results) helpers.logger.info(`request ${r.id}: ${r.outcome}`);
      if (unknown.length) throw new Error(`COUTMSGS insert not confirmed for request(s) ${unknown.map((r) => r.id).join(', ')}`);
    },
  };
}

export function requestsCrontab(config: Config, now: Date = new Date()): string {
  const at = config['msgx.requests.daily-schedule-at'];
  if (!at) return '';
  const [h, m] = at.split(':').map(Number);
  const tz = config['msgx.airport.timezone'];
  const w = wallClock(now, tz);
  const utc = fromWallClock(w.year, w.month, w.day, h, m, 0, tz);
  return `${utc.getUTCMinutes()} ${utc.getUTCHours()} * * * request {type:"RQFD",operationDay:"tomorrow"}`;
}

// GET /flights/:flid?asOf=<ISO-8601 with offset>: the complete state the gateway held (and
// published) for a flight at a past moment (lib/flight/as-of.ts rebuilds it), in the shape of
// GET /flights/:flid plus AS_OF (which version, which message made it, when, until when).
//   200  the state (a DELETED one only with includeDeleted=true, as without asOf)
//   400  asOf is not an ISO-8601 time with an offset, or is later than now
//   404  {error: 'not-found', code}: unknown-flight | not-yet-created | deleted | purged
//   422  {error: 'outside-retention', code: 'outside-retention', earliest}: the records of that
//        moment are gone; `earliest` is the first moment after it the gateway can answer for
import type { Db } from '../db/postgres.ts';
import { flightAsOf } from '../flight/as-of.ts';
import { isoLocal, toJson } from '../flight/state.ts';

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-](\d{2}):(\d{2}))$/;

/** asOf text → instant, or the reason it is refused (the 400's reason). */
export function parseAsOf(text: string, now: Date): Date | string {
  const shape = 'asOf must be an ISO-8601 time with a zone offset, e.g. 2026-12-01T14:05:00+08:00 or 2026-12-01T06:05:00Z';
  if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)? \d{2}:\d{2}$/.test(text)) return `${shape}; its offset arrived as a space: a + in a query string means a space, send it as %2B`;
  const m = ISO.exec(text);
  if (!m) {
    if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) return `${shape}; without an offset the time is ambiguous`;
    return shape;
  }
  const [y, mo, d, h, mi, s] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0));
  const day = new Date(0);
  day.setUTCFullYear(y, mo - 1, d); // (Date.UTC reads years 0–99 as 1900–1999)
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return `asOf: ${m[1]}-${m[2]}-${m[3]} is not a calendar date`;
  if (h > 23 || mi > 59 || s > 59) return `asOf: ${m[4]}:${m[5]}${m[6] ? ':' + m[6] : ''} is not a time of day (00:00:00–23:59:59)`;
  if (m[9] !== undefined && (Number(m[10]) > 59 || Number(m[9]) * 60 + Number(m[10]) > 14 * 60)) return `asOf: offset ${m[8]} is not a zone offset (−14:00…+14:00)`;
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) return shape;
  if (at.getTime() > now.getTime()) return `asOf ${text} is later than now (${now.toISOString()}): leave asOf out for the current state`;
  return at;
}

/** The answer (status, body) for flight `flid` as of `at`. */
export async function asOfAnswer(o: { db: Db; timeZone: string }, flid: string, at: Date, includeDeleted: boolean): Promise<{ status: number; body: unknown }> {
  const tz = o.timeZone;
  const when = isoLocal(at, tz);
  const a = await flightAsOf(o.db, flid, at, tz);
  switch (a.kind) {
    case 'unknown-flight':
      return {
        status: 404,
        body: {
          error: 'not-found',
          code: 'unknown-flight',
          reason: `nothing is retained about flight ${flid} (change records are kept msgx.pipeline.event-retention, purged flights msgx.history.retention)`,
        },
      };
    case 'not-yet-created':
      return { status: 404, body: { error: 'not-found', code: 'not-yet-created', reason: `flight ${flid} did not exist yet at ${when}: it was created at ${a.createdAt}`, createdAt: a.createdAt } };
    case 'purged':
      return {
        status: 404,
        body: {
          error: 'not-found',
          code: 'purged',
          reason:
            `flight ${flid} was not held at ${when}: it was purged to history at ${a.archivedAt} (rule ${a.purgeRule}, version ${a.stateVersion})` +
            (a.returnedAt ? ` and came back at ${a.returnedAt}` : ''),
          stateVersion: a.stateVersion,
          archivedAt: a.archivedAt,
          returnedAt: a.returnedAt,
        },
      };
    case 'outside-retention':
      return {
        status: 422,
        body: {
          error: 'outside-retention',
          code: 'outside-retention',
          reason:
            `the change records of flight ${flid} at ${when} are gone (kept msgx.pipeline.event-retention)` + (a.earliest ? `; the earliest moment the gateway can answer for is ${a.earliest}` : ''),
          earliest: a.earliest,
        },
      };
    case 'state': {
      const s = a.state;
      if (s.STATE === 'DELETED' && !includeDeleted)
        return {
          status: 404,
          body: {
            error: 'not-found',
            code: 'deleted',
            reason: `flight ${flid} was deleted at ${when} (version ${s.STATE_VERSION}, since ${s.UPDATED_AT}); includeDeleted=true shows that state`,
            stateVersion: s.STATE_VERSION,
            deletedAt: s.UPDATED_AT,
          },
        };
      return {
        status: 200,
        body: {
          ...toJson(s),
          AS_OF: { at: when, stateVersion: s.STATE_VERSION, since: s.UPDATED_AT, until: a.validUntil, message: a.madeBy, source: a.source },
        },
      };
    }
  }
}

// HTTP reads of complete flight states (api process):
//   GET /flights/:flid                → the complete state JSON; 404 {error, reason} unknown / deleted
//                                        (?includeDeleted=true returns a DELETED flight's last state)
//   GET /flights/:flid?asOf=<ISO-8601>  → the state as of that moment (lib/api/flight-as-of.ts)
//   GET /all/flights?operationDay=YYYY-MM-DD&cursor=<FLID>&limit=1..1000&includeDeleted=true|false
//                                      → {flights: [...], nextCursor, msgPosition}; 400 {error, reason} on bad parameters
//                                        (msgPosition: where to start reading the msg topic after loading
//                                        the pages from the first one on, docs/consumers.md "Starting from nothing")
import type { FastifyInstance } from 'fastify';
import { systemClock, type Clock } from '../core/clock.ts';
import { asOfAnswer, parseAsOf } from './flight-as-of.ts';
import { anyObject, boolText, clientErrors, errors, flid as flidSchema, str } from './schema.ts';
import { listFlights, readFlights } from '../flight/read.ts';
import { toJson } from '../flight/state.ts';
import type { Executor } from '../flight/store.ts';
import * as History from '../sql/history.ts';
import * as Outbox from '../sql/outbox/positions.ts';

export interface FlightRoutesOptions {
  db: Executor;
  /** msgx.airport.timezone: times are published as ISO-8601 with this zone's offset. */
  timeZone: string;
  /** The api's clock (asOf later than now is refused); the system clock when not given. */
  clock?: Clock;
}

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

const bad = (reason: string) => ({ error: 'bad-request', reason });

function parseBool(v: string | undefined, name: string): boolean | string {
  if (v === undefined || v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  return `${name} must be true or false`;
}

function validDay(d: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(d);
  if (!m) return false;
  const t = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return t.toISOString().slice(0, 10) === d;
}

const flightSchema = { ...anyObject, description: 'the complete flight state (docs/flight-state.md)', required: ['FLID', 'STATE', 'STATE_VERSION'] } as const;

export async function flightRoutes(app: FastifyInstance, opts: FlightRoutesOptions): Promise<void> {
  clientErrors(app);
  const one = {
    summary: 'The complete state of one flight',
    params: { type: 'object', required: ['flid'], properties: { flid: flidSchema } },
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        includeDeleted: boolText,
        asOf: str({
          minLength: 1,
          maxLength: 64,
          description:
            'a past moment, ISO-8601 with a zone offset (e.g. 2026-12-01T14:05:00+08:00; send + as %2B): the state held and published then, plus AS_OF {at, stateVersion, since, until, message, source}; 404 code not-yet-created/deleted/purged/unknown-flight, 422 outside-retention with the earliest moment answerable',
        }),
      },
    },
    response: { 200: flightSchema, ...errors(400, 404, 422, 500) },
  };
  const page = {
    summary: 'Complete flight states, a page at a time (FLID order)',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        operationDay: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'YYYY-MM-DD' },
        cursor: flidSchema,
        limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE },
        includeDeleted: boolText,
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['flights', 'nextCursor', 'msgPosition'],
        properties: {
          flights: { type: 'array', items: flightSchema },
          nextCursor: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          msgPosition: {
            type: 'array',
            description:
              "msg topic offsets read before this page: per partition, the offset from which the msg topic holds every change not in this page (and any later page); a partition not listed: from its earliest offset. Use the first page's (docs/consumers.md)",
            items: { type: 'object', required: ['partition', 'offset'], additionalProperties: false, properties: { partition: { type: 'integer' }, offset: { type: 'string', pattern: '^[0-9]+$' } } },
          },
        },
        additionalProperties: false,
      },
      ...errors(400, 500),
    },
  };
  app.get<{ Params: { flid: string }; Querystring: { includeDeleted?: string; asOf?: string } }>('/flights/:flid', { schema: one }, async (req, reply) => {
    const flid = req.params.flid;
    if (!/^\d{1,30}$/.test(flid)) return reply.code(400).send(bad('flid must be a decimal flight id'));
    const inc = parseBool(req.query.includeDeleted, 'includeDeleted');
    if (typeof inc === 'string') return reply.code(400).send(bad(inc));
    const canonical = flid.replace(/^0+(?=\d)/, '');
    if (req.query.asOf !== undefined) {
      const at = parseAsOf(req.query.asOf, (opts.clock ?? systemClock).now());
      if (typeof at === 'string') return reply.code(400).send(bad(at));
      const a = await asOfAnswer(opts, canonical, at, inc);
      return reply.code(a.status).send(a.body);
    }
    const s = (await readFlights(opts.db, [canonical], opts.timeZone)).get(canonical);
    if (!s) {
      // A flight purged by retention is in the history store: say so (a corpus of old flights is purged after a restart).
      const archived = await History.readTimelineArchived(opts.db, canonical);
      const last = archived[archived.length - 1];
      const reason = last
        ? `flight ${canonical} was purged to history at ${last.archived_at.toISOString()} (rule ${last.purge_rule}: operation day ${last.operation_day ?? 'unknown'} older than msgx.history.purge-after, or deleted long enough); its versions: GET /flights/${canonical}/timeline`
        : `no flight with FLID ${canonical}`;
      return reply.code(404).send({ error: 'not-found', reason });
    }
    if (s.STATE === 'DELETED' && !inc) return reply.code(404).send({ error: 'not-found', reason: `flight ${canonical} is deleted`, stateVersion: s.STATE_VERSION });
    return toJson(s);
  });

  app.get<{ Querystring: { operationDay?: string; cursor?: string; limit?: number | string; includeDeleted?: string } }>('/all/flights', { schema: page }, async (req, reply) => {
    const q = req.query;
    if (q.operationDay !== undefined && !validDay(q.operationDay)) return reply.code(400).send(bad('operationDay must be a date YYYY-MM-DD'));
    if (q.cursor !== undefined && !/^\d{1,30}$/.test(q.cursor)) return reply.code(400).send(bad('cursor must be a FLID (decimal)'));
    let limit = DEFAULT_PAGE;
    if (q.limit !== undefined) {
      if (!/^\d{1,5}$/.test(String(q.limit)) || Number(q.limit) < 1 || Number(q.limit) > MAX_PAGE) return reply.code(400).send(bad(`limit must be an integer 1–${MAX_PAGE}`));
      limit = Number(q.limit);
    }
    const inc = parseBool(q.includeDeleted, 'includeDeleted');
    if (typeof inc === 'string') return reply.code(400).send(bad(inc));
    // The msg position BEFORE the page: every change the page misses commits after the page's
    // snapshot, hence after this read, and its record lands after these offsets.
    const msgPosition = await Outbox.readMsgPositions(opts.db);
    const page = await listFlights(opts.db, { operationDay: q.operationDay, cursor: q.cursor, limit, includeDeleted: inc }, opts.timeZone);
    // Serialised here with JSON.stringify, not by the response schema's serializer: the flights
    // are free-form objects (additionalProperties), which it writes key by key, several times
    // slower for a page of 1,000 flights; the body is the same (same object, same key order, same
    // content type), and the schema still documents it (OpenAPI).
    const body: { flights: unknown[]; nextCursor: string | null; msgPosition: { partition: number; offset: string }[] } = {
      flights: page.flights.map(toJson),
      nextCursor: page.nextCursor,
      msgPosition: msgPosition.map((p) => ({ partition: p.partition, offset: p.offset })),
    };
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
  });
}

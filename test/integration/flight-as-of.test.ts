// GET /flights/:flid?asOf=… against the real pipeline (intake → pump, ManualClock), the real
// retention jobs and the api's flight route with its hardening (strict query, OpenAPI document):
// a master (500) and a shared flight (501) through create, updates, one batch of two messages,
// delete with the master's MAFL cascade, revive, the master's delete cascading to the shared
// flight, the change records' retention, the history purge and a return after it. After every
// message the test records what GET /flights/:flid answered; the state answered as of that moment
// (and up to just before the next one) must be exactly that answer.
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightRoutes } from '../../lib/api/flight-routes.ts';
import { hardenApi } from '../../lib/api/hardening.ts';
import { ManualClock } from '../../lib/core/clock.ts';
import { slices } from '../../lib/core/config.ts';
import { connectClient } from '../../lib/db/postgres.ts';
import { createQuerySessionDb, type QueryDb } from '../../lib/db/kysely.ts';
import { isoLocal } from '../../lib/flight/state.ts';
import { retentionSettings, type RetentionDeps } from '../../lib/lifecycle/common.ts';
import { purgeFlights } from '../../lib/lifecycle/flights.ts';
import { purgeFlightChanges } from '../../lib/lifecycle/trace-records.ts';
import { createHttpServer } from '../../lib/runtime/http.ts';
import { testAccess } from '../support/access.ts';
import { testConfig, TEST_PG_URL } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { openServices, putInbox, resetDomain, resetPipeline, silentLog, type TestServices } from '../support/services.ts';
import { flop, rec, schd, TZ } from './flight-support.ts';

const SEC = 1000;
const DAY = 86_400_000;
const FLIDS = ['500', '501'] as const;

let s: TestServices;
let purgeClient: pg.Client;
let purgeSession: { db: QueryDb };
const clock = new ManualClock('2026-12-01T00:00:00Z');
// the api's own server (strict schemas) with the api's hardening, as workers/api.ts builds it
const app = createHttpServer(slices(testConfig()).http, silentLog, testAccess().gate);
const ajv = new Ajv({ strict: false, allErrors: true });
formats.default(ajv);
let responses: Record<string, { content?: Record<string, { schema: object }> }>;
const validators = new Map<number, ValidateFunction>();

/** GET through the route; every answer is checked against the route's OpenAPI response schema. */
async function get(url: string): Promise<{ status: number; body: any }> {
  const r = await app.inject(url);
  const body = r.json();
  const schema = responses[String(r.statusCode)]?.content?.['application/json']?.schema;
  expect(schema, `${url}: status ${r.statusCode} is documented`).toBeDefined();
  const v = validators.get(r.statusCode) ?? ajv.compile(schema!);
  validators.set(r.statusCode, v);
  expect(v(body), `${url}: ${ajv.errorsText(v.errors)}`).toBe(true);
  return { status: r.statusCode, body };
}
const at = (d: Date | number) => isoLocal(new Date(d), TZ);
const asOf = (flid: string, when: Date | number | string, extra = '') => get(`/flights/${flid}?asOf=${encodeURIComponent(typeof when === 'string' ? when : at(when))}${extra}`);
const withoutAsOf = (b: Record<string, unknown>) => {
  const { AS_OF: _, ...rest } = b;
  return rest;
};

/** What GET /flights/:flid?includeDeleted=true answered right after each message (null: 404). */
const recorded: { at: number; flid: string; body: Record<string, unknown> | null }[] = [];

/** Apply these messages through the pipeline at `when`, then record each flight's GET answer. */
async function feed(when: string, ...xml: string[]): Promise<void> {
  clock.set(when);
  for (const x of xml) await putInbox(s.inbox, x);
  await runPipelineUntilSettled(s, testConfig(), clock);
  await record();
}
async function record(): Promise<void> {
  for (const flid of FLIDS) {
    const r = await app.inject(`/flights/${flid}?includeDeleted=true`);
    recorded.push({ at: clock.now().getTime(), flid, body: r.statusCode === 200 ? r.json() : null });
  }
}
function deps(overrides: Record<string, string> = {}): RetentionDeps {
  return { db: s.db, inbox: s.inbox, redis: s.redis, clock, ...retentionSettings(testConfig(overrides)), log: silentLog };
}
async function changeRecords(flid: string) {
  return (
    await sql<{ state_version: number; op: string; cause: string; created_at: Date }>`
    select state_version, op, cause, created_at from flight_change where flid = ${flid} order by state_version`.execute(s.db)
  ).rows;
}

/**
 * Every recorded answer (from `from(flid)` on) is what asOf answers at its moment, half-way to the
 * next recorded moment and one second before it; before that, `before(flid, moment)` is checked.
 */
async function checkRecorded(o: { from?: (flid: string) => number; before?: (flid: string, when: number) => Promise<void> } = {}): Promise<number> {
  let n = 0;
  for (const flid of FLIDS) {
    const mine = recorded.filter((r) => r.flid === flid);
    for (const [i, r] of mine.entries()) {
      const next = mine[i + 1]?.at ?? clock.now().getTime() + SEC;
      for (const when of new Set([r.at, Math.floor((r.at + next) / 2 / SEC) * SEC, next - SEC])) {
        if (when > clock.now().getTime()) continue;
        if (o.from && when < o.from(flid)) {
          await o.before?.(flid, when);
          continue;
        }
        const a = await asOf(flid, when, '&includeDeleted=true');
        if (r.body === null) {
          expect(a.status, `${flid} at ${at(when)}`).toBe(404);
          expect(a.body.code).toBe('purged');
        } else {
          expect(a.status, `${flid} at ${at(when)}: ${JSON.stringify(a.body)}`).toBe(200);
          expect(withoutAsOf(a.body), `${flid} at ${at(when)}`).toEqual(r.body);
          expect(a.body.AS_OF).toMatchObject({ at: at(when), stateVersion: r.body.STATE_VERSION, since: r.body.UPDATED_AT });
          expect(a.body.AS_OF.message.msgId).toBe(r.body.LAST_MSG_ID ?? null);
          // without includeDeleted a DELETED state is a 404 naming it, as without asOf
          if (r.body.STATE === 'DELETED') expect((await asOf(flid, when)).body).toMatchObject({ error: 'not-found', code: 'deleted', stateVersion: r.body.STATE_VERSION });
        }
        n++;
      }
    }
  }
  return n;
}

// Moments (UTC; the airport zone is Asia/Shanghai, +08:00).
const T0 = '2026-12-01T01:00:00Z'; // ADFT creates master 500 and shared 501 (MAID 500)
const T1 = '2026-12-01T02:00:00Z'; // 501 stand
const T2 = '2026-12-02T03:00:00Z'; // 500 gate
const T3 = '2026-12-02T04:00:00Z'; // 500 ESTT and MAXP: two messages, one moment
const T4 = '2026-12-03T05:00:00Z'; // 501 deleted (500's MAFL loses it: cause MAFL)
const T5 = '2026-12-04T06:00:00Z'; // 501 revived by an ADFT (500's MAFL again)
const T6 = '2026-12-05T07:00:00Z'; // 500 deleted (501 with it: cause CASCADE)
const RECORDS_PURGED = '2026-12-09T03:30:00Z'; // change records older than 7 d: those of T0..T2 go
const PURGED = new Date(Date.parse(T6) + 7 * DAY + SEC).toISOString(); // both DELETED > purge-after: archived
const T7 = '2026-12-12T08:00:00Z'; // 500 comes back (a new CREATE above its version floor)
const ms = (t: string) => Date.parse(t);

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
  purgeClient = await connectClient(TEST_PG_URL, 'test-as-of-purge');
  purgeSession = { db: createQuerySessionDb(purgeClient) };
  await hardenApi(app, { scriptSources: ["'self'"], connectSources: [], log: silentLog });
  await app.register(flightRoutes, { db: s.db, timeZone: TZ, clock });
  await app.ready();
  responses = (await app.inject('/openapi.json')).json().paths['/flights/{flid}'].get.responses;
});
afterAll(async () => {
  await app.close();
  await purgeClient?.end().catch(() => {});
  await s?.close();
});

describe('GET /flights/:flid?asOf= (flight state as of a moment)', () => {
  it('while every change record is retained: each moment answers what GET answered then', async () => {
    await feed(T0, schd('ADFT', [rec('500', 9), rec('501', 9, '<MAID>500</MAID>')]));
    await feed(T1, flop('STND', '501', '<STND>12</STND>'));
    await feed(T2, flop('GTDT', '500', '<GTDT GTNO="1"><GATE>G1</GATE><GTYP>D</GTYP></GTDT>'));
    await feed(T3, flop('ESTT', '500', `<ESTT>09DEC260930</ESTT>`), flop('MAXP', '500', '<MAXP>180</MAXP>'));
    await feed(T4, flop('FDEL', '501', '<FDEL></FDEL>'));
    await feed(T5, schd('ADFT', [rec('501', 9, '<MAID>500</MAID><STND>14</STND>')]));
    await feed(T6, flop('FDEL', '500', '<FDEL></FDEL>'));

    // the scenario covers what it claims: one moment with two versions, cascades with a cause, revive
    const master = await changeRecords('500');
    const atT3 = master.filter((c) => c.created_at.getTime() === ms(T3));
    expect(atT3).toHaveLength(2);
    expect(master.map((c) => c.cause)).toContain('MAFL');
    const shared = await changeRecords('501');
    expect(shared.map((c) => c.op)).toEqual(expect.arrayContaining(['CREATE', 'DELETE', 'REVIVE']));
    expect(shared[shared.length - 1]).toMatchObject({ op: 'DELETE', cause: 'CASCADE' });
    expect(recorded.find((r) => r.flid === '501' && r.at === ms(T5))!.body).toMatchObject({ STATE: 'ACTIVE', STND: '14', MAID: '500' });
    expect(recorded.find((r) => r.flid === '500' && r.at === ms(T5))!.body).toMatchObject({ MAFL: [{ FLID: '501' }] });
    expect(recorded.find((r) => r.flid === '500' && r.at === ms(T4))!.body!.MAFL).toBeUndefined();

    clock.set(new Date(ms(T6) + DAY));
    expect(await checkRecorded()).toBeGreaterThan(30);

    // T3: the later of the two versions made at that moment, the earlier one never answered
    const t3 = await asOf('500', ms(T3));
    expect(t3.body.AS_OF).toMatchObject({
      stateVersion: atT3[1].state_version,
      since: at(ms(T3)),
      until: at(ms(T4)),
      source: 'change-records',
      message: { kind: 'FLOP/MAXP', op: 'UPDATE', cause: 'MESSAGE' },
    });
    expect(t3.body).toMatchObject({ MAXP: 180, ESTT: '2026-12-09T09:30:00+08:00' });
    // the master's MAFL version at T4 was made by 501's delete message
    const t4 = await asOf('500', ms(T4));
    expect(t4.body.AS_OF.message).toMatchObject({ kind: 'FLOP/FDEL', cause: 'MAFL' });
    // the current version is the flight row itself; a time inside a second counts as that second
    expect((await asOf('500', clock.now(), '&includeDeleted=true')).body.AS_OF).toMatchObject({ source: 'current', until: null });
    expect((await asOf('501', '2026-12-01T10:00:00.999+08:00')).body).toMatchObject({ FLID: '501', AS_OF: { at: '2026-12-01T10:00:00+08:00', since: at(ms(T1)) } });
    expect((await asOf('501', '2026-12-01T09:59:59.999+08:00')).body.AS_OF.since).toBe(at(ms(T0)));

    // before the flight existed: 404 naming when it was created
    const early = await asOf('500', ms(T0) - SEC);
    expect(early).toEqual({ status: 404, body: { error: 'not-found', code: 'not-yet-created', reason: expect.stringContaining(at(ms(T0))), createdAt: at(ms(T0)) } });
    expect((await asOf('500', '2026-11-01T00:00:00Z')).body.code).toBe('not-yet-created');
    // a FLID never seen
    expect(await asOf('999', ms(T0))).toMatchObject({ status: 404, body: { code: 'unknown-flight' } });
  });

  it('refuses a bad asOf with 400 and a specific reason', async () => {
    const cases: [string, RegExp][] = [
      ['yesterday', /ISO-8601 time with a zone offset/],
      ['2026-12-01', /ISO-8601 time with a zone offset/],
      ['2026-12-01T14:05:00', /without an offset the time is ambiguous/],
      ['2026-12-01T14:05:00 08:00', /send it as %2B/],
      ['2026-02-30T10:00:00Z', /2026-02-30 is not a calendar date/],
      ['2026-12-01T24:00:00Z', /24:00:00 is not a time of day/],
      ['2026-12-01T10:61Z', /10:61 is not a time of day/],
      ['2026-12-01T10:00:00+15:00', /offset \+15:00 is not a zone offset/],
      ['2026-12-01T10:00:00+14:30', /offset \+14:30 is not a zone offset/],
      ['2026-12-01T10:00:00+0800', /ISO-8601 time with a zone offset/],
      ['2030-01-01T00:00:00Z', /later than now/],
    ];
    for (const [v, reason] of cases) {
      const r = await get(`/flights/500?asOf=${encodeURIComponent(v)}`);
      expect(r.status, v).toBe(400);
      expect(r.body, v).toEqual({ error: 'bad-request', reason: expect.stringMatching(reason) });
    }
    // a raw + in the URL arrives as a space
    expect((await get('/flights/500?asOf=2026-12-01T14:05:00+08:00')).body.reason).toMatch(/%2B/);
    for (const url of ['/flights/500?asOf=', '/flights/500?asOf=2026-12-01T10:00:00Z&asof=x', '/flights/abc?asOf=2026-12-01T10:00:00Z']) {
      const r = await get(url);
      expect(r.status, url).toBe(400);
      expect(r.body.reason, url).toBeTruthy();
    }
  });

  it('after the change records of the first days are gone: 422 outside-retention naming the earliest moment', async () => {
    clock.set(RECORDS_PURGED);
    expect(await purgeFlightChanges(deps())).toBeGreaterThan(0);
    expect((await changeRecords('500')).every((c) => c.created_at.getTime() >= ms(T3))).toBe(true);
    // 500: the ESTT version of T3 is the oldest whose record is left; 501: its delete at T4
    const earliest = (flid: string) => (flid === '500' ? ms(T3) : ms(T4));
    const outside = async (flid: string, when: number) => {
      const r = await asOf(flid, when, '&includeDeleted=true');
      const e = at(earliest(flid));
      expect(r, `${flid} at ${at(when)}`).toEqual({ status: 422, body: { error: 'outside-retention', code: 'outside-retention', reason: expect.stringContaining(e), earliest: e } });
    };
    expect(await checkRecorded({ from: earliest, before: outside })).toBeGreaterThan(10);
    for (const w of [ms(T0), ms(T2), ms(T3) - SEC]) await outside('500', w);
    for (const w of [ms(T0) - DAY, ms(T1), ms(T4) - SEC]) await outside('501', w);
  });

  it('after the history purge (archive) and a return: purged moments are 404 purged, the rest as before', async () => {
    clock.set(PURGED);
    expect(await purgeFlights(deps(), purgeSession)).toBe(2);
    await record();
    await feed(T7, schd('ADFT', [rec('500', 12)]));
    const back = recorded[recorded.length - 2].body!;
    expect(back).toMatchObject({ FLID: '500', STATE: 'ACTIVE', OPERATION_DAY: '2026-12-12' });
    clock.set(new Date(ms(T7) + 3600 * SEC));

    // versions before the purge are rebuilt from the archived state and the records still kept
    expect(await checkRecorded({ from: (flid) => (flid === '500' ? ms(T3) : ms(T4)), before: async () => {} })).toBeGreaterThan(10);
    const gap = await asOf('500', ms(T7) - SEC);
    expect(gap).toEqual({
      status: 404,
      body: {
        error: 'not-found',
        code: 'purged',
        reason: expect.stringMatching(/purged to history .* came back/),
        stateVersion: expect.any(Number),
        archivedAt: at(ms(PURGED)),
        returnedAt: at(ms(T7)),
      },
    });
    expect((await asOf('501', clock.now())).body).toMatchObject({ code: 'purged', returnedAt: null });
    // the archived state answers up to the purge, with its source said
    expect((await asOf('501', ms(PURGED) - SEC, '&includeDeleted=true')).body.AS_OF).toMatchObject({ source: 'archive', until: at(ms(PURGED)) });
    // now = the route without asOf; the return's version continues above the archived one
    const now = await asOf('500', clock.now());
    expect(withoutAsOf(now.body)).toEqual((await app.inject('/flights/500')).json());
    expect(now.body.STATE_VERSION).toBeGreaterThan(gap.body.stateVersion);
    expect(now.body.AS_OF.message).toMatchObject({ kind: 'SCHD/ADFT', op: 'CREATE' });
  });
});

// Reads: GET /flights/:flid and GET /all/flights (fastify inject) against the real Postgres;
// one snapshot per request (never torn under a concurrent writer), fixed query count;
// a 9,999-flight snapshot is set-based and atomic.
import Fastify from 'fastify';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { flightRoutes } from '../../lib/api/flight-routes.ts';
import { createPool } from '../../lib/db/postgres.ts';
import type { Database } from '../../lib/db/schema.ts';
import { TEST_PG_URL } from '../support/env.ts';
import { applyMessage } from '../support/refdata-ctx.ts';
import { openServices, type TestServices } from '../support/services.ts';
import { apply, config, count, fltr, nextMsgId, rec, registry, resetFlights, schd, TZ } from './flight-support.ts';

let s: TestServices;
let queries = 0;
const pool = createPool(TEST_PG_URL, { max: 4, name: 'flight-reads' });
const counted = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: () => void queries++ });
const app = Fastify();

beforeAll(async () => {
  s = await openServices();
  await app.register(flightRoutes, { db: counted, timeZone: TZ });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await counted.destroy();
  await s.close();
});
beforeEach(async () => resetFlights(s.db, s.redis));

describe('GET /flights/:flid', () => {
  it('200 complete state, 404 unknown / deleted with reason, 400 bad id', async () => {
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9, '<GTDT GTNO="1"><GATE>G1</GATE></GTDT><SRVT><SRTC>A</SRTC></SRVT>')]));
    const ok = await app.inject('/flights/1');
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      FLID: '1',
      STATE: 'ACTIVE',
      OPERATION_DAY: '2026-12-09',
      SODT: '2026-12-09T08:00:00+08:00',
      GTDT: [{ GTNO: 1, GATE: 'G1' }],
      SRVT: ['<SRVT><SRTC>A</SRTC></SRVT>'],
    });
    expect((await app.inject('/flights/2')).json()).toMatchObject({ error: 'not-found', reason: 'no flight with FLID 2' });
    expect((await app.inject('/flights/abc')).statusCode).toBe(400);
    await apply(s.db, s.redis, schd('DNLD', [rec('3', 9)]));
    const del = await app.inject('/flights/1');
    expect(del.statusCode).toBe(404);
    expect(del.json().reason).toMatch(/deleted/);
    expect((await app.inject('/flights/1?includeDeleted=true')).json()).toMatchObject({ STATE: 'DELETED' });
  });
});

describe('GET /all/flights', () => {
  it('pages by FLID cursor, filters by operation day, 400 on bad parameters', async () => {
    await apply(
      s.db,
      s.redis,
      schd(
        'DNLD',
        ['10', '11', '12', '13', '14'].map((f) => rec(f, 9)),
      ),
    );
    await apply(s.db, s.redis, schd('DNLD', [rec('20', 10)]));
    const p1 = (await app.inject('/all/flights?operationDay=2026-12-09&limit=2')).json();
    expect(p1.flights.map((f: { FLID: string }) => f.FLID)).toEqual(['10', '11']);
    expect(p1.nextCursor).toBe('11');
    const p3 = (await app.inject('/all/flights?operationDay=2026-12-09&limit=2&cursor=13')).json();
    expect(p3).toMatchObject({ flights: [{ FLID: '14' }], nextCursor: null });
    expect((await app.inject('/all/flights')).json().flights).toHaveLength(6);
    for (const bad of ['operationDay=2026-02-30', 'limit=0', 'limit=5000', 'cursor=x', 'includeDeleted=maybe']) {
      const r = await app.inject(`/all/flights?${bad}`);
      expect(r.statusCode, bad).toBe(400);
      expect(r.json().reason).toBeTruthy();
    }
  });

  it('query count does not depend on the page size', async () => {
    await apply(
      s.db,
      s.redis,
      schd(
        'DNLD',
        Array.from({ length: 60 }, (_, i) => rec(String(100 + i), 9, '<GTDT GTNO="1"><GATE>G</GATE></GTDT><CKDT CKNO="1"><CHKC>1</CHKC></CKDT>')),
      ),
    );
    queries = 0;
    await app.inject('/all/flights?limit=1');
    const one = queries;
    queries = 0;
    const r = await app.inject('/all/flights?limit=60');
    expect(r.json().flights).toHaveLength(60);
    expect(queries).toBe(one);
    expect(one).toBeLessThan(25);
  });

  it('a concurrent writer never yields a torn flight (main row and details from one moment)', async () => {
    const flids = Array.from({ length: 20 }, (_, i) => String(500 + i));
    const recordsAt = (n: number) =>
      flids.map((f) => fltr(f, `<FLNO>XX${f}</FLNO><SODT>09DEC260800</SODT><STND>S${n}</STND><GTDT GTNO="1"><GATE>G${n}</GATE></GTDT><GTDT GTNO="2"><GATE>G${n}</GATE></GTDT>`));
    await apply(s.db, s.redis, schd('DNLD', recordsAt(0)));
    let stop = false;
    let written = 0;
    const writer = (async () => {
      for (let n = 1; !stop; n++) {
        await applyMessage(s.db, { xml: schd('DNLD', recordsAt(n)), msgId: nextMsgId(), now: new Date(), config, registry });
        written++;
      }
    })();
    // reads until a few of them overlapped the writer's commits (a count, not a time window: a loaded machine only takes longer)
    let reads = 0;
    let writtenAtFirstRead = -1;
    const until = Date.now() + 30_000;
    while ((reads < 10 || written - writtenAtFirstRead < 5) && Date.now() < until) {
      if (reads === 0) writtenAtFirstRead = written;
      const page = (await app.inject('/all/flights?limit=20')).json();
      const stnds = new Set<string>();
      for (const f of page.flights) {
        const n = f.STND.slice(1);
        expect(f.GTDT.map((g: { GATE: string }) => g.GATE)).toEqual([`G${n}`, `G${n}`]);
        stnds.add(n);
      }
      expect(stnds.size).toBe(1); // one snapshot for the whole page
      reads++;
    }
    const overlapped = written - writtenAtFirstRead;
    stop = true;
    await writer;
    expect(reads).toBeGreaterThan(3);
    expect(overlapped, 'the writer committed while the pages were read').toBeGreaterThanOrEqual(5);
  });
});

describe('a 9,999-flight snapshot', () => {
  it('is applied set-based (bounded statements) and atomically (nothing visible before commit)', async () => {
    const records = Array.from({ length: 9999 }, (_, i) =>
      rec(String(10000 + i), 9, `<GTDT GTNO="1"><GATE>G${i}</GATE></GTDT><ERUT RTNO="1"><APCD>PEK</APCD></ERUT><ERUT RTNO="2"><APCD>SHA</APCD></ERUT><STND>S${i}</STND>`),
    );
    const xml = schd('DNLD', records);
    let statements = 0;
    let visibleBeforeCommit = -1;
    const spy = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: () => void statements++ });
    const t0 = Date.now();
    const r = await applyMessage(spy, { xml, msgId: nextMsgId(), now: new Date(), config, registry: wrap() });
    const ms = Date.now() - t0;
    expect(r).toMatchObject({ outcome: 'applied' });
    expect(visibleBeforeCommit).toBe(0);
    expect(await count(s.db, 'flight_schd')).toBe(9999);
    expect(await count(s.db, 'flight_route_point')).toBe(19998);
    expect(await count(s.db, 'msg_event')).toBe(29997); // msg, schd and state row per flight
    expect(statements).toBeLessThan(80);
    expect(ms).toBeLessThan(30_000);
    const gen = await sql<{ n: number }>`select count(*)::int as n from schd_gen_flid where operation_day = '2026-12-09'`.execute(s.db);
    expect(gen.rows[0].n).toBe(9999);

    /** The snapshot handler, plus a look from another connection just before the commit. */
    function wrap() {
      const h = registry.resolve('SCHD', 'DNLD')!;
      const reg = {
        resolve: () => async (ctx: Parameters<typeof h>[0]) => {
          const out = await h(ctx);
          visibleBeforeCommit = await count(s.db, 'flight_schd');
          return out;
        },
      };
      return reg as unknown as typeof registry;
    }
  });
});

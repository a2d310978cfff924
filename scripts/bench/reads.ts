// B6: GET /all/flights over 10,000 flights (target ≤ 1 s, a fixed number of queries).
// The flights come from two snapshots (9,999 + 1) through the real pump; the route is the api's
// own fastify plugin, called over HTTP on loopback, paging with the maximum page size.
//   npm run bench:reads -- [runs=5]
import Fastify from 'fastify';
import pg from 'pg';
import { systemClock } from '../../lib/core/clock.ts';
import { buildMirror, buildRegistry } from '../../lib/app/composition.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { flightRoutes, MAX_PAGE } from '../../lib/api/flight-routes.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { drain, pumpSettings } from '../../lib/pipeline/pump.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { emptyAll, machine, median, openBench } from './setup.ts';
import { slices } from '../../lib/core/config.ts';

const runs = Number(process.argv[2] ?? 5);
const b = await openBench();
const log = createLogger('bench', 'silent');
await emptyAll(b);
await insertInboxRow(b.inbox, { body: bigSnapshot(9999, 1, { seqn: 1 }), received: '2026-12-01 08:00:00' });
await insertInboxRow(b.inbox, { body: bigSnapshot(1, 10_000, { seqn: 2 }).replace(/01DEC26/g, '02DEC26'), received: '2026-12-01 08:00:00' });
await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(b.config).intake, log });
await drain(
  {
    session: b.session,
    inbox: b.inbox,
    registry: buildRegistry(),
    mirror: buildMirror({ db: b.db, redis: b.redis, airport: slices(b.config).airport }),
    clock: systemClock,
    ...pumpSettings(b.config),
    log,
  },
  600_000,
);

// count statements issued by the route
let statements = 0;
const origQuery = pg.Client.prototype.query;
(pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown }).query = function (this: pg.Client, ...a: unknown[]) {
  statements++;
  return (origQuery as (...x: unknown[]) => unknown).apply(this, a);
};
const app = Fastify();
await app.register(flightRoutes, { db: b.db, timeZone: b.config['msgx.airport.timezone'] });
const address = await app.listen({ port: 0, host: '127.0.0.1' });
const times: number[] = [];
let flights = 0;
let pages = 0;
let perPageStatements = 0;
for (let r = 0; r < runs; r++) {
  const t = performance.now();
  let cursor: string | null = null;
  flights = 0;
  pages = 0;
  statements = 0;
  do {
    const res = await fetch(`${address}/all/flights?limit=${MAX_PAGE}${cursor ? `&cursor=${cursor}` : ''}`);
    const body = (await res.json()) as { flights: unknown[]; nextCursor: string | null };
    flights += body.flights.length;
    pages++;
    cursor = body.nextCursor;
  } while (cursor);
  times.push(performance.now() - t);
  perPageStatements = statements / pages;
}
console.log(
  JSON.stringify(
    { bench: 'B6 GET /all/flights', machine: machine(), flights, pages, pageSize: MAX_PAGE, runs, allPagesMsMedian: Math.round(median(times)), statementsPerPage: +perPageStatements.toFixed(1) },
    null,
    2,
  ),
);
await app.close();
await b.close();

// B6: GET /all/flights over 10,000 flights (target ≤ 1 s, a fixed number of queries).
// The flights come from two snapshots (9,999 + 1) through the real pump; the route is the api's
// own fastify plugin, called over HTTP on loopback, paging with the maximum page size.
//   npm run bench:reads -- [runs=5]
import { scriptHelp } from '../args.ts';
import Fastify from 'fastify';
import pg from 'pg';
import { flightRoutes, MAX_PAGE } from '../../lib/api/flight-routes.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { machine, median, openBench, pumpTenThousandFlights } from './setup.ts';

scriptHelp(import.meta.url);
const runs = Number(process.argv[2] ?? 5);
const b = await openBench();
const log = createLogger('bench', 'silent');
await pumpTenThousandFlights(b, log);

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

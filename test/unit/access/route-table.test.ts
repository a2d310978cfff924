// The route table (lib/access/routes.ts) against every route the processes really register: the
// api's (built as workers/api.ts builds it, lib/app/api.ts, on a scratch fastify server that
// never listens) and the status server's of every other process (lib/runtime/status-routes.ts).
// A route the table does not name fails here (and the server refuses to register it); a table
// entry no process registers fails too. Then the roles the table gives, spelled out.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { ROUTE_ROLES, routeKey } from '../../../lib/access/routes.ts';
import { apiHttp } from '../../../lib/app/api.ts';
import { slices } from '../../../lib/core/config.ts';
import { systemClock } from '../../../lib/core/clock.ts';
import { createAodbPool } from '../../../lib/db/mysql.ts';
import { createDb, createPool } from '../../../lib/db/postgres.ts';
import { createHttpServer } from '../../../lib/runtime/http.ts';
import type { Runtime } from '../../../lib/runtime/process.ts';
import { statusRoutes } from '../../../lib/runtime/status-routes.ts';
import { Health } from '../../../lib/runtime/health.ts';
import { testAccess } from '../../support/access.ts';
import { testConfig } from '../../support/env.ts';
import { silentLog } from '../../support/services.ts';

/** Every route of the api as `METHOD /url` (HEAD routes fastify adds for GETs left out: they need what their GET needs). */
async function apiRoutes(): Promise<string[]> {
  const config = testConfig();
  const access = testAccess(config);
  const app = createHttpServer(slices(config).http, silentLog, access.gate);
  const seen: string[] = [];
  app.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) if (m !== 'HEAD') seen.push(routeKey(m, r.url));
  });
  for (const path of Object.keys(statusRoutes('api', new Health({ log: silentLog })))) app.get(path, async () => '');
  const pool = createPool(config.DATABASE_URL, { max: 1, name: 'route-table' }); // never connects: nothing is called
  const rt = { config, log: silentLog, clock: systemClock, db: createDb(pool), access, edges: { aodbPool: () => createAodbPool(config.INBOX_URL, { timeoutMs: 1000 }) } } as unknown as Runtime;
  await apiHttp(app, rt);
  await app.ready();
  await app.close();
  await pool.end();
  await access.close();
  return seen;
}

describe('the route table names every route of every process', () => {
  it('every route the api registers is in the table, and every table entry is a registered route', async () => {
    const api = await apiRoutes();
    const status = Object.keys(statusRoutes('pump', new Health({ log: silentLog }))).map((p) => routeKey('GET', p));
    const table = Object.keys(ROUTE_ROLES);
    expect(api.filter((r) => !table.includes(r))).toEqual([]);
    expect(status.filter((r) => !table.includes(r))).toEqual([]);
    expect(table.filter((r) => !api.includes(r) && !status.includes(r))).toEqual([]);
    expect(api.length).toBe(new Set(api).size);
    expect(api.length).toBe(table.length); // the api serves every route, /metrics and /healthz included
  });

  it('a route missing from the table stops the server from registering it', async () => {
    const access = testAccess();
    const app = createHttpServer(slices(testConfig()).http, silentLog, access.gate);
    expect(() => app.get('/ops/not-in-the-table', async () => '')).toThrow(/not in the route table of lib\/access\/routes.ts/);
    await app.close();
    await access.close();
    expect(() => Fastify().get('/x', async () => '')).not.toThrow(); // (a plain fastify would take it)
  });

  it('the roles: reads for a viewer, operator actions for an operator, message injection for an admin, the page public', () => {
    const by = (need: string) =>
      Object.entries(ROUTE_ROLES)
        .filter(([, n]) => n === need)
        .map(([k]) => k)
        .sort();
    expect(by('admin')).toEqual(['POST /cminmsgs/send']);
    expect(by('operator')).toEqual(['POST /ops/backfill-resume', 'POST /ops/dispatch-replay', 'POST /ops/dispatch-skip', 'POST /ops/replay', 'POST /requests']);
    expect(by('public')).toEqual(['GET /healthz', 'GET /ops', 'GET /ops/config', 'GET /ops/console.css', 'GET /ops/js/:file']);
    expect(by('viewer').every((k) => k.startsWith('GET '))).toBe(true);
    expect(by('viewer')).toContain('GET /metrics');
    expect(by('viewer')).toContain('GET /all/flights');
  });
});

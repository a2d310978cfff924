// The api's HTTP routes, composed (workers/api.ts hands this to runProcess; the route-table test
// registers the same on a scratch server). Registering a route (also for new route files): every
// route is a plugin or lives in one that calls clientErrors(scope) (lib/api/schema.ts), and
// declares
//   - a line in the route table of lib/access/routes.ts with the role it needs (the server does
//     not start without one; the access gate checks it in onRequest, before the body is read);
//   - `schema`: params / querystring / body with types, ranges, enums (strings via str(), ids via
//     dbId/dbIds), and `response` per status: validation and GET /openapi.json come from it (a
//     route without one is logged at start as missing from the contract); `security: bearer`;
//   - `bodyLimit: JSON_BODY_LIMIT` for a JSON body (the server default is 64 KiB);
//   - `config: { audit: '<action>' }` for an operator action (lib/api/audit.ts).
import type { FastifyInstance } from 'fastify';
import { slices, type Config } from '../core/config.ts';
import { auditRoutes } from '../api/audit.ts';
import { CONSOLE_SCRIPT_SOURCES, consoleRoutes } from '../api/console.ts';
import { dispatchRoutes } from '../api/dispatch-routes.ts';
import { flightRoutes } from '../api/flight-routes.ts';
import { hardenApi } from '../api/hardening.ts';
import { inboxRoutes } from '../api/inbox-routes.ts';
import { opsRoutes } from '../api/ops-routes.ts';
import { refdataRoutes } from '../api/refdata-routes.ts';
import { requestRoutes } from '../api/request-routes.ts';
import { traceRoutes } from '../api/trace-routes.ts';
import { registerRequestsGauge } from '../requests/metrics.ts';
import { requestSettings } from '../requests/outbound.ts';
import type { Runtime } from '../runtime/process.ts';

/**
 * Why this configuration gives nobody access to the api, or null: outside development mode it
 * needs API keys or an identity provider (MSGX_API_TOKEN is refused there by the configuration).
 */
export function apiAccessProblem(config: Config): string | null {
  const s = slices(config);
  if (s.http.devMode || s.http.apiKeysFile || s.oidc.issuer) return null;
  return 'outside development mode the api needs MSGX_API_KEYS_FILE (service accounts) or MSGX_OIDC_ISSUER (sign-in): docs/operations.md "Access and roles" (or MSGX_DEV_MODE=true for local use)';
}

export async function apiHttp(app: FastifyInstance, rt: Runtime): Promise<void> {
  const s = slices(rt.config);
  if (s.http.devMode) rt.log.warn({}, `development mode (MSGX_DEV_MODE=true): the shared token ${s.http.apiToken ? 'MSGX_API_TOKEN' : '"dev"'} is an admin`);
  const issuer = s.oidc.issuer ? [new URL(s.oidc.issuer).origin] : [];
  await hardenApi(app, { scriptSources: CONSOLE_SCRIPT_SOURCES, connectSources: issuer, log: rt.log });
  auditRoutes(app, rt.access.trail);
  const inbox = rt.edges.aodbPool();
  app.addHook('onClose', () => inbox.end());
  await app.register(async (scoped) => inboxRoutes(scoped, { inbox, settings: s.inbox, clock: rt.clock }));
  await app.register(async (scoped) => opsRoutes(scoped, { db: rt.db, clock: rt.clock, inbox, timeoutMs: s.io.timeoutMs, timeZone: s.airport.timezone }));
  await app.register(async (scoped) => consoleRoutes(scoped, { db: rt.db, clock: rt.clock, access: rt.access, timeoutMs: s.io.timeoutMs }));
  await app.register(async (scoped) => traceRoutes(scoped, { db: rt.db, inbox, clock: rt.clock, settings: s.trace })); // trace, timeline, console reads
  await app.register(flightRoutes, { db: rt.db, timeZone: s.airport.timezone, clock: rt.clock });
  await app.register(async (scoped) => refdataRoutes(scoped, { db: rt.db, clock: rt.clock }));
  await app.register(async (scoped) => {
    await requestRoutes(scoped, { db: rt.db, ...requestSettings(rt.config), clock: rt.clock });
    await dispatchRoutes(scoped, { db: rt.db });
  });
  registerRequestsGauge(rt.db);
}

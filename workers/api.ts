// api: POST /cminmsgs/send, reads (reference data, resource status), requests to the AODB,
// operator actions over HTTP, and the operator tasks (replay, backfill-resume, request) for the
// graphile-worker CLI/SQL, plus the evening crontab line requesting tomorrow's schedule.
import { slices } from '../lib/core/config.ts';
import { TASK } from '../lib/core/tasks.ts';
import type { Task } from 'graphile-worker';
import { apiToken, bearerGuard } from '../lib/api/auth.ts';
import { auditLog, auditRoutes } from '../lib/api/audit.ts';
import { hardenApi } from '../lib/api/hardening.ts';
import { inboxRoutes } from '../lib/api/inbox-routes.ts';
import { opsRoutes } from '../lib/api/ops-routes.ts';
import { CONSOLE_SCRIPT_SOURCES, consoleRoutes } from '../lib/api/console.ts';
import { traceRoutes } from '../lib/api/trace-routes.ts';
import { replayReport, resumeReport, type ReplayRequest, type ResumeRequest } from '../lib/pipeline/operator.ts';
import { loadConfigOrExit, runProcess } from '../lib/runtime/process.ts';
import { refdataRoutes } from '../lib/api/refdata-routes.ts';
import { flightRoutes } from '../lib/api/flight-routes.ts';
import { dispatchOperatorTasks } from '../lib/dispatch/actions.ts';
import { dispatchRoutes } from '../lib/api/dispatch-routes.ts';
import { requestRoutes } from '../lib/api/request-routes.ts';
import { registerRequestsGauge } from '../lib/requests/metrics.ts';
import { requestSettings } from '../lib/requests/outbound.ts';
import { requestsCrontab, requestTasks } from '../lib/requests/tasks.ts';

// Token rules first: without a proper token outside development mode the api does not start.
try {
  apiToken(slices(loadConfigOrExit('api')).http);
} catch (e) {
  process.stderr.write(`api: ${(e as Error).message}\n`);
  process.exit(2);
}

await runProcess({
  name: 'api',
  poolMax: 8, // concurrent reads of the HTTP routes
  needs: ['mariadb'], // POST /cminmsgs/send, the inbox and trace reads, requests to the AODB
  http: async (app, rt) => {
    const { token, who, dev } = apiToken(slices(rt.config).http); // throws (no start) without a proper token outside dev mode
    if (dev) rt.log.warn({ who }, `development mode (MSGX_DEV_MODE=true)${rt.config.MSGX_API_TOKEN ? '' : ': MSGX_API_TOKEN is empty, token "dev" accepted'}`);
    const audit = auditLog(rt.log);
    await hardenApi(app, { scriptSources: CONSOLE_SCRIPT_SOURCES, log: rt.log });
    auditRoutes(app, audit);
    const guard = bearerGuard(app, { token, who, audit });
    const inbox = rt.edges.aodbPool();
    app.addHook('onClose', () => inbox.end());

    // Registering a route (also for new route files): every route is a plugin or lives in one
    // that calls clientErrors(scope) (lib/api/schema.ts), and declares
    //   - `schema`: params / querystring / body with types, ranges, enums (strings via str(),
    //     ids via dbId/dbIds), and `response` per status: validation and GET /openapi.json
    //     come from it (a route without one is logged at start as missing from the contract);
    //   - `onRequest: guard` for a token route (never preHandler: the body must not be read
    //     before the token is checked) and `security: bearer` in its schema; or register it in
    //     the guarded scope below, whose onRequest hook is the guard;
    //   - `bodyLimit: JSON_BODY_LIMIT` for a JSON body (the server default is 64 KiB);
    //   - `config: { audit: '<action>' }` for an operator action (lib/api/audit.ts).
    await app.register(async (scoped) => inboxRoutes(scoped, { inbox, settings: slices(rt.config).inbox, clock: rt.clock, guard }));
    await app.register(async (scoped) => opsRoutes(scoped, { db: rt.db, clock: rt.clock, guard, inbox, timeoutMs: slices(rt.config).io.timeoutMs, timeZone: slices(rt.config).airport.timezone }));
    await app.register(async (scoped) => consoleRoutes(scoped, { db: rt.db, clock: rt.clock, guard }));
    await app.register(async (scoped) => traceRoutes(scoped, { db: rt.db, inbox, clock: rt.clock, settings: slices(rt.config).trace, guard })); // trace, timeline, console v2 reads
    await app.register(flightRoutes, { db: rt.db, timeZone: slices(rt.config).airport.timezone, clock: rt.clock });
    await app.register(async (scoped) => refdataRoutes(scoped, { db: rt.db, clock: rt.clock }));
    await app.register(async (scoped) => {
      scoped.addHook('onRequest', guard);
      await requestRoutes(scoped, { db: rt.db, ...requestSettings(rt.config), clock: rt.clock });
      await dispatchRoutes(scoped, { db: rt.db });
    });
    registerRequestsGauge(rt.db);
  },
  crontab: (config, now) => requestsCrontab(requestSettings(config), now) || '# no daily schedule request (msgx.requests.daily-schedule-at is empty)',
  tasks: async (rt, _leader, opened) => {
    const outbox = opened.add(rt.edges.aodbPool(), (p) => p.end());
    const replay: Task = async (payload) => {
      const r = await replayReport(rt.db, rt.clock, payload as ReplayRequest, { inbox: outbox, timeoutMs: slices(rt.config).io.timeoutMs });
      rt.log.info({ msgIds: r.done }, 'replay task: messages back to PENDING');
      if (r.untouched.length) rt.log.warn({ untouched: r.untouched }, 'replay task: matched messages left as they are');
    };
    const resume: Task = async (payload) => {
      const r = await resumeReport({ db: rt.db, inbox: outbox, clock: rt.clock, timeoutMs: slices(rt.config).io.timeoutMs }, payload as ResumeRequest);
      rt.log.info({ msgIds: r.done }, 'backfill-resume task: abandoned backfills resumed');
      if (r.untouched.length) rt.log.warn({ untouched: r.untouched }, 'backfill-resume task: matched messages left as they are');
    };
    return {
      tasks: {
        [TASK.replay]: replay,
        [TASK.backfillResume]: resume,
        ...dispatchOperatorTasks(rt.db, rt.log),
        ...requestTasks({ db: rt.db, outbox, ...requestSettings(rt.config), clock: rt.clock, log: rt.log }),
      },
    };
  },
});

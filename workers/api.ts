// api: POST /cminmsgs/send, reads (reference data, resource status), requests to the AODB,
// operator actions over HTTP, and the operator tasks (replay, backfill-resume, request) for the
// graphile-worker CLI/SQL, plus the evening crontab line requesting tomorrow's schedule.
import type { Task } from 'graphile-worker';
import { bearerGuard } from '../lib/api/auth.ts';
import { inboxRoutes } from '../lib/api/inbox-routes.ts';
import { opsRoutes } from '../lib/api/ops-routes.ts';
import { consoleRoutes } from '../lib/api/console.ts';
import { createInbox } from '../lib/db/mysql.ts';
import { replayReport, resumeReport, type ReplayRequest } from '../lib/pipeline/operator.ts';
import { runProcess } from '../lib/runtime/process.ts';
import { refdataRoutes } from '../lib/refdata/routes.ts';
import { flightRoutes } from '../lib/flight/routes.ts';
import { dispatchOperatorTasks } from '../lib/dispatch/actions.ts';
import { dispatchRoutes } from '../lib/dispatch/routes.ts';
import { requestRoutes } from '../lib/requests/routes.ts';
import { registerRequestsGauge } from '../lib/requests/metrics.ts';
import { requestsCrontab, requestTasks } from '../lib/requests/tasks.ts';

await runProcess({
  name: 'api',
  http: async (app, rt) => {
    const token = rt.config.MSGX_API_TOKEN;
    if (!token) {
      if (!rt.config['msgx.dev-mode']) throw new Error('MSGX_API_TOKEN is required outside development mode (MSGX_DEV_MODE=false)');
      rt.log.warn('MSGX_API_TOKEN is empty: development mode, token "dev" accepted');
    }
    const guard = bearerGuard(token || 'dev');
    const inbox = createInbox(rt.config.INBOX_URL, { timeoutMs: rt.config['msgx.io.timeout'] });
    app.addHook('onClose', () => inbox.end());
    await app.register(async (scoped) => inboxRoutes(scoped, { inbox, config: rt.config, clock: rt.clock, guard }));
    await opsRoutes(app, { db: rt.db, clock: rt.clock, guard });
    await consoleRoutes(app, { db: rt.db, clock: rt.clock, guard });
    await app.register(flightRoutes, { db: rt.db, timeZone: rt.config['msgx.airport.timezone'] });
    await refdataRoutes(app, { db: rt.db, clock: rt.clock });
    await app.register(async (scoped) => {
      scoped.addHook('onRequest', guard as never);
      await requestRoutes(scoped, { db: rt.db, config: rt.config, clock: rt.clock });
      await dispatchRoutes(scoped, { db: rt.db });
    });
    registerRequestsGauge(rt.db);
  },
  crontab: (config) => requestsCrontab(config) || '# no daily schedule request (msgx.requests.daily-schedule-at is empty)',
  tasks: async (rt) => {
    const replay: Task = async (payload) => {
      const r = await replayReport(rt.db, rt.clock, payload as ReplayRequest);
      rt.log.info({ msgIds: r.done }, 'replay task: messages back to PENDING');
      if (r.untouched.length) rt.log.warn({ untouched: r.untouched }, 'replay task: matched messages left as they are');
    };
    const resume: Task = async (payload) => {
      const r = await resumeReport(rt.db, rt.clock, payload as { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' });
      rt.log.info({ msgIds: r.done }, 'backfill-resume task: abandoned backfills resumed');
      if (r.untouched.length) rt.log.warn({ untouched: r.untouched }, 'backfill-resume task: matched messages left as they are');
    };
    const outbox = createInbox(rt.config.INBOX_URL, { timeoutMs: rt.config['msgx.io.timeout'] });
    return {
      tasks: { replay, 'backfill-resume': resume, ...dispatchOperatorTasks(rt.db, rt.log), ...requestTasks({ db: rt.db, outbox, config: rt.config, clock: rt.clock, log: rt.log }) },
      close: () => outbox.end(),
    };
  },
});

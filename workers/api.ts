// api: POST /cminmsgs/send, reads (reference data, resource status), requests to the AODB,
// operator actions over HTTP, and the operator tasks (replay, backfill-resume, request) for the
// graphile-worker CLI/SQL, plus the evening crontab line requesting tomorrow's schedule.
import { slices } from '../lib/core/config.ts';
import { TASK } from '../lib/core/tasks.ts';
import type { Task } from 'graphile-worker';
import { apiAccessProblem, apiHttp } from '../lib/app/api.ts';
import { replayReport, resumeReport, type ReplayRequest, type ResumeRequest } from '../lib/pipeline/operator.ts';
import { loadConfigOrExit, runProcess } from '../lib/runtime/process.ts';
import { dispatchOperatorTasks } from '../lib/dispatch/actions.ts';
import { requestSettings } from '../lib/requests/outbound.ts';
import { requestsCrontab, requestTasks } from '../lib/requests/tasks.ts';

// Access first: outside development mode, without keys or an identity provider nobody could call the api.
const problem = apiAccessProblem(loadConfigOrExit('api'));
if (problem) {
  process.stderr.write(`api: ${problem}\n`);
  process.exit(2);
}

await runProcess({
  name: 'api',
  poolMax: 8, // concurrent reads of the HTTP routes
  needs: ['mariadb'], // POST /cminmsgs/send, the inbox and trace reads, requests to the AODB
  http: apiHttp, // lib/app/api.ts: the routes, the console, the audit of operator actions
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

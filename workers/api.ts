// api: POST /cminmsgs/send, reads, operator actions over HTTP, and the operator tasks
// (replay, backfill-resume) for the graphile-worker CLI/SQL.
import type { Task } from 'graphile-worker';
import { bearerGuard } from '../lib/api/auth.ts';
import { inboxRoutes } from '../lib/api/inbox-routes.ts';
import { opsRoutes } from '../lib/api/ops-routes.ts';
import { createInbox } from '../lib/db/mysql.ts';
import { replayMessages, resumeBackfills, type ReplayRequest } from '../lib/pipeline/operator.ts';
import { runProcess } from '../lib/runtime/process.ts';

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
    await inboxRoutes(app, { inbox, config: rt.config, clock: rt.clock, guard });
    await opsRoutes(app, { db: rt.db, clock: rt.clock, guard });
  },
  tasks: async (rt) => {
    const replay: Task = async (payload) => {
      const ids = await replayMessages(rt.db, rt.clock, payload as ReplayRequest);
      rt.log.info({ msgIds: ids }, 'replay task: messages back to PENDING');
    };
    const resume: Task = async (payload) => {
      const ids = await resumeBackfills(rt.db, rt.clock, payload as { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' });
      rt.log.info({ msgIds: ids }, 'backfill-resume task: abandoned backfills resumed');
    };
    return { tasks: { replay, 'backfill-resume': resume } };
  },
});

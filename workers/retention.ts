// retention: lifecycle and purge jobs (lib/lifecycle, docs/lifecycle.md) on msgx.retention.schedule.
// Any number of instances: graphile-worker runs the job once, and the history purge takes its own
// try-lock (HISTORY_PURGE_LEADER) plus PIPELINE_LOCK per batch on a dedicated connection.
import { ConfigError, slices } from '../lib/core/config.ts';
import { createSessionDb } from '../lib/db/postgres.ts';
import { RETENTION_TASK } from '../lib/core/tasks.ts';
import { retentionSettings } from '../lib/lifecycle/common.ts';
import { retentionCrontab, retentionTasks } from '../lib/lifecycle/tasks.ts';
import { loadConfigOrExit, runProcess } from '../lib/runtime/process.ts';
import { RestoreWatch } from '../lib/watches/restore.ts';
import type { Task } from 'graphile-worker';
import { withDeadline } from '../lib/runtime/leader.ts';

// Validate msgx.retention.schedule before anything starts (a bad value names the key, exit 2).
try {
  retentionCrontab(loadConfigOrExit('retention'));
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  process.stderr.write(`retention: ${e.message}\n`);
  process.exit(2);
}

await runProcess({
  name: 'retention',
  needs: ['mariadb', 'redis'],
  kick: [RETENTION_TASK],
  crontab: (config) => retentionCrontab(config),
  tasks: async (rt, _leader, opened) => {
    const inbox = opened.add(rt.edges.aodbPool(), (p) => p.end());
    const redis = opened.add(rt.edges.redis(), (r) => r.disconnect());
    const deps = { db: rt.db, inbox, redis, clock: rt.clock, ...retentionSettings(rt.config), log: rt.log };
    // The purge's session-level locks live on a connection of its own, opened per run.
    const openSession = async () => {
      const client = await rt.edges.pgSession('retention-purge'); // watched: a frozen session is closed and ended on the server
      // end() waits for the server's goodbye: bounded, then the socket is destroyed (a frozen path)
      const close = () => withDeadline(client.end(), 2000, 'purge session end').catch(() => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy());
      return { db: createSessionDb(client), close };
    };
    // Postgres restored from a backup (lib/watches/restore.ts): the history purge would tombstone
    // flights at versions already on the msg topic with other content, so no run while held.
    const restore = opened.add(
      new RestoreWatch({ db: rt.db, inbox, inboxReadOnly: slices(rt.config).inbox.readOnly, redis, clock: rt.clock, timeoutMs: slices(rt.config).io.timeoutMs, log: rt.log }),
      (w) => w.stop(),
    );
    await restore.start();
    const tasks = retentionTasks(deps, openSession, rt.signal) as Record<string, Task>;
    return {
      tasks: Object.fromEntries(
        Object.entries(tasks).map(([name, task]) => [
          name,
          (async (payload, helpers) => {
            if (await restore.heldOnceChecked()) {
              // not checked: graphile-worker retries the job with its backoff; behind: the operator's recovery comes first
              if (restore.unchecked()) throw new Error('retention run postponed: the check whether Postgres is behind (restored from a backup) has not completed; retried with backoff');
              return rt.log.warn({ task: name }, 'retention run skipped: Postgres is behind (restored from a backup?); the next scheduled run tries again');
            }
            return task(payload, helpers);
          }) as Task,
        ]),
      ),
    };
  },
});

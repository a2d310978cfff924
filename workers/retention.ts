// retention: lifecycle and purge jobs (lib/lifecycle, lifecycle.md) on msgx.retention.schedule.
// Any number of instances: graphile-worker runs the job once, and the history purge takes its own
// try-lock (HISTORY_PURGE_LEADER) plus PIPELINE_LOCK per batch on a dedicated connection.
import { ConfigError } from '../lib/core/config.ts';
import { createSessionDb } from '../lib/db/postgres.ts';
import { RETENTION_TASK } from '../lib/core/tasks.ts';
import { retentionSettings } from '../lib/lifecycle/common.ts';
import { retentionCrontab, retentionTasks } from '../lib/lifecycle/tasks.ts';
import { loadConfigOrExit, runProcess } from '../lib/runtime/process.ts';
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
  tasks: async (rt) => {
    const inbox = rt.edges.aodbPool();
    const redis = rt.edges.redis();
    const deps = { db: rt.db, inbox, redis, clock: rt.clock, ...retentionSettings(rt.config), log: rt.log };
    // The purge's session-level locks live on a connection of its own, opened per run.
    const openSession = async () => {
      const client = await rt.edges.pgSession('retention-purge'); // watched: a frozen session is closed and ended on the server
      // end() waits for the server's goodbye: bounded, then the socket is destroyed (a frozen path)
      const close = () => withDeadline(client.end(), 2000, 'purge session end').catch(() => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy());
      return { db: createSessionDb(client), close };
    };
    return {
      tasks: retentionTasks(deps, openSession, rt.signal),
      close: async () => {
        await inbox.end();
        redis.disconnect();
      },
    };
  },
});

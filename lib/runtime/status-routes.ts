// The two routes every process serves (lib/access/routes.ts names what each needs):
//   GET /metrics  Prometheus text, for a viewer (ops/prometheus.yml scrapes with a viewer key)
//   GET /healthz  readiness: what the checks last saw (no call on the pool, which may hang on a
//                 frozen path). Open to anyone, but only `ok` and the names of the conditions;
//                 the reasons (host names, users, certificates, scrubbed of secrets) only for a
//                 viewer, or for anyone when msgx.http.anonymous-reads names /healthz.
import type { ProcessName } from '../core/tasks.ts';
import { scrub } from '../core/secrets.ts';
import { RUNTIME } from '../core/tuning.ts';
import { conditions, healthNotes } from './conditions.ts';
import type { Health } from './health.ts';
import { withDeadline } from './leader.ts';
import { metrics, registry } from './metrics.ts';
import type { StatusRoute } from './status-server.ts';

const SCRAPE_MS = RUNTIME.scrapeMs;

export function statusRoutes(name: ProcessName, health: Health): Record<'/metrics' | '/healthz', StatusRoute> {
  return {
    '/metrics': async () => {
      metrics.postgresUp.set(health.isUp('postgres') ? 1 : 0);
      metrics.postgresDownSeconds.set(health.downSeconds('postgres'));
      return { type: registry.contentType, body: await scrape(health) };
    },
    '/healthz': async (caller) => {
      const h = health.snapshot();
      // a condition a module of this process set (lib/runtime/conditions.ts, e.g. Postgres restored
      // from a backup): not ready either, and why
      const held = conditions().map((c) => ({ ...c, reason: scrub(c.reason) }));
      const ok = h.ok && held.length === 0;
      if (!caller.details) {
        const names = [...Object.entries(h.dependencies).flatMap(([n, d]) => (d.up ? [] : [n])), ...held.map((c) => c.name)];
        return { status: ok ? 200 : 503, body: { ok, process: name, ...(names.length ? { conditions: names } : {}) } };
      }
      const body = { ok, process: name, postgres: health.isUp('postgres') ? 'up' : 'unreachable', dependencies: h.dependencies, ...(held.length ? { conditions: held } : {}), ...healthNotes() };
      return ok ? { body } : { status: 503, body: { ...body, reason: [...h.reasons, ...held.map((c) => `${c.name}: ${c.reason}`)].join('; ') } };
    },
  };
}

/**
 * The registry's text. Some gauges are collected from Postgres at scrape time: when one cannot
 * be (an outage, a frozen connection), the others are still served and it is left out (its
 * absence is what an alert on the series sees); one log line a minute at most.
 */
async function scrape(health: Health): Promise<string> {
  try {
    return await withDeadline(registry.metrics(), SCRAPE_MS, 'metrics');
  } catch (e) {
    health.quiet('metrics-scrape', e, 'a metric could not be collected; served without it', 'postgres');
    const parts = await Promise.all(
      registry.getMetricsAsArray().map((m) => withDeadline(registry.getSingleMetricAsString((m as unknown as { name: string }).name), SCRAPE_MS / 2, 'metric').catch(() => '')),
    );
    return `${parts.filter(Boolean).join('\n')}\n`;
  }
}

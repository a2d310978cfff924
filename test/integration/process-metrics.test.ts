// The eight processes (the Procfile's entry files) as Prometheus sees them: each exports the
// metrics it owns and no other process's, Node's default process_*/nodejs_* metrics and
// msgx_build_info; counters with known label sets start at 0. Then a real Prometheus (Debian's
// `prometheus` package) scrapes all eight with ops/prometheus-alerts.yml loaded: every target up,
// every rule healthy. Without the binary the Prometheus part is skipped VISIBLY (CI installs it).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { deleteTopics, uniqueTopic } from './dispatch-support.ts';

const NAMES = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch', 'retention', 'api'] as const;
const topics = { msg: uniqueTopic('metrics-msg'), schd: uniqueTopic('metrics-schd'), state: uniqueTopic('metrics-state') };
const procs: Proc[] = [];
const texts = new Map<string, string>();

const has = (name: string, metric: string) =>
  texts
    .get(name)!
    .split('\n')
    .some((l) => l.startsWith(metric + ' ') || l.startsWith(metric + '{'));
const line = (name: string, prefix: string) =>
  texts
    .get(name)!
    .split('\n')
    .find((l) => l.startsWith(prefix));

beforeAll(async () => {
  for (const n of NAMES) procs.push(startWorker(n, { MSGX_KAFKA_MSG_TOPIC: topics.msg, MSGX_KAFKA_SCHD_TOPIC: topics.schd, MSGX_KAFKA_STATE_TOPIC: topics.state, MSGX_KAFKA_PARTITIONS: '1' }));
  for (const p of procs) {
    await waitFor(`${p.name} /metrics`, async () => (await fetch(`http://127.0.0.1:${p.port}/metrics`)).ok, 60_000);
    // a dispatcher registers its series once its Kafka topic is ready (after /metrics answers)
    if (p.name.endsWith('-dispatch'))
      await waitFor(`${p.name} dispatch series`, async () => (await (await fetch(`http://127.0.0.1:${p.port}/metrics`)).text()).includes('msgx_dispatch_sent_total{'), 60_000);
    texts.set(p.name, await (await fetch(`http://127.0.0.1:${p.port}/metrics`)).text());
  }
}, 120_000);
afterAll(async () => {
  await stopAll(procs);
  await deleteTopics([topics.msg, topics.schd, topics.state]);
});

describe('each process exports what it owns', () => {
  it('default process_/nodejs_ metrics and msgx_build_info on all eight', () => {
    for (const n of NAMES) {
      expect(has(n, 'process_cpu_seconds_total'), n).toBe(true);
      expect(has(n, 'nodejs_heap_size_used_bytes'), n).toBe(true);
      expect(line(n, 'msgx_build_info{'), n).toMatch(new RegExp(`^msgx_build_info\\{version="0\\.1\\.0",node="v\\d+[^"]*",process="${n}"\\} 1$`));
    }
  });

  it('pipeline, backfill and dispatch series only on their own process', () => {
    const owner: Record<string, string[]> = {
      msgx_intake_scanned_rows_total: ['intake'],
      msgx_intake_inbox_read_age_seconds: ['intake'],
      msgx_pipeline_backlog_messages: ['pump'],
      msgx_messages_total: ['pump'],
      msgx_backfill_pending: ['backfill'],
      msgx_backfill_attempts_over_limit: ['backfill'],
      msgx_backfill_abandoned_total: ['backfill'],
      msgx_dispatch_sent_total: ['msg-dispatch', 'schd-dispatch', 'state-dispatch'],
      msgx_dispatch_oldest_pending_seconds: ['msg-dispatch', 'schd-dispatch', 'state-dispatch'],
      msgx_flights_without_operation_day: ['retention'],
      msgx_requests: ['api'],
    };
    for (const [metric, owners] of Object.entries(owner)) {
      const exporters = NAMES.filter((n) => has(n, metric));
      if (metric === 'msgx_messages_total')
        expect(
          exporters.every((n) => owners.includes(n)),
          metric,
        ).toBe(true); // born with the first outcome
      else expect(exporters, metric).toEqual(owners);
    }
  });

  it('alerting counters start at 0 for their known label sets', () => {
    expect(line('backfill', 'msgx_backfill_abandoned_total{reason="MISSING_ROW"}')).toMatch(/ 0$/);
    expect(line('backfill', 'msgx_backfill_abandoned_total{reason="TRANSIENT_DEADLINE"}')).toMatch(/ 0$/);
    expect(line('pump', 'msgx_requests_failed_total{kind="RQFD"}')).toMatch(/ 0$/);
    // the dispatchers' series exist from the start (they may already have sent what an earlier test left in the shared outbox)
    expect(line('msg-dispatch', 'msgx_dispatch_sent_total{target="msg"}')).toMatch(/ \d+$/);
    expect(line('schd-dispatch', 'msgx_dispatch_sent_total{target="schd"}')).toMatch(/ \d+$/);
    expect(line('state-dispatch', 'msgx_dispatch_sent_total{target="state"}')).toMatch(/ \d+$/);
    expect(line('msg-dispatch', 'msgx_dispatch_oldest_pending_seconds{target="msg"}')).toBeDefined();
  });
});

const prometheus = spawnSync('prometheus', ['--version']).status === 0;
if (!prometheus) console.warn('SKIPPED: a real Prometheus scraping the eight processes (no `prometheus` binary; apt-get install prometheus)');

describe.skipIf(!prometheus)('a real Prometheus scrapes all eight', () => {
  let prom: ChildProcess | undefined;
  let dir = '';
  afterAll(() => {
    prom?.kill('SIGTERM');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every target is up and every alert rule is healthy', async () => {
    dir = mkdtempSync(join(tmpdir(), 'msgx-prom-'));
    const port = 19690 + Math.floor(Math.random() * 9);
    const targets = procs.map((p) => `{ targets: ['127.0.0.1:${p.port}'], labels: { process: '${p.name}' } }`).join(', ');
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global: { scrape_interval: 1s, evaluation_interval: 1s }\nrule_files: ['${resolve('ops/prometheus-alerts.yml')}']\nscrape_configs:\n  - job_name: msgx\n    static_configs: [${targets}]\n`,
    );
    prom = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
      stdio: 'ignore',
    });
    const api = async (path: string) => ((await (await fetch(`http://127.0.0.1:${port}${path}`)).json()) as { data: any }).data;
    const up = await waitFor(
      'all eight targets up',
      async () => {
        const t = (await api('/api/v1/targets')).activeTargets as { health: string; labels: { process: string } }[];
        return t.length === NAMES.length && t.every((x) => x.health === 'up') ? t : undefined;
      },
      60_000,
      500,
    );
    expect(up.map((t) => t.labels.process).sort()).toEqual([...NAMES].sort());
    const rules = await waitFor(
      'every rule evaluated',
      async () => {
        const r = ((await api('/api/v1/rules')).groups as { rules: { name: string; health: string; lastEvaluation: string }[] }[]).flatMap((g) => g.rules);
        return r.length > 0 && r.every((x) => !x.lastEvaluation.startsWith('0001')) ? r : undefined;
      },
      30_000,
      500,
    );
    expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
    expect(rules.length).toBeGreaterThanOrEqual(10);
  });
});

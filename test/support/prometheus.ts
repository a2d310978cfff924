// A real Prometheus (Debian's package) scraping processes on this machine with the shipped
// ops/prometheus-local.yml (what a person running `npm start` uses, 127.0.0.1 at the default
// ports). A test runs the processes on ports of its own, so each target's port becomes that
// process's port (found by its `process` label), the rule file an absolute path, rules evaluated
// every second and targets scraped every 3 s with a 3 s timeout: the bound the processes set
// themselves on collecting their metrics (SCRAPE_MS, lib/runtime/process.ts), where a 1 s timeout
// would measure the machine's load rather than the configuration. Nothing else changes: same
// jobs, labels and alert rules.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort } from './ports.ts';

export const PROMETHEUS = process.env.PROMETHEUS_PATH ?? '/usr/bin/prometheus';
export const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
export const OPS = path.resolve(import.meta.dirname, '../../ops');

interface StaticConfig {
  targets: string[];
  labels?: Record<string, string>;
}
interface PromConfig {
  global?: Record<string, unknown>;
  rule_files?: string[];
  scrape_configs: { job_name: string; static_configs: StaticConfig[] }[];
}

/** ops/prometheus.yml (compose service names) or ops/prometheus-local.yml (127.0.0.1, default ports). */
export function shippedConfig(file: 'prometheus.yml' | 'prometheus-local.yml' = 'prometheus.yml'): PromConfig {
  return parse(readFileSync(path.join(OPS, file), 'utf8')) as PromConfig;
}

/** Every target of the shipped config as host:port (the compose service names). */
export function shippedTargets(): string[] {
  return shippedConfig().scrape_configs.flatMap((j) => j.static_configs.flatMap((s) => s.targets));
}

/** ops/prometheus-local.yml with each process's target on the port the test gave it. */
export function localConfig(ports: Record<string, number>): PromConfig {
  const c = shippedConfig('prometheus-local.yml');
  c.global = { ...c.global, scrape_interval: '3s', scrape_timeout: '3s', evaluation_interval: '1s' };
  c.rule_files = (c.rule_files ?? []).map((f) => path.resolve(OPS, f));
  for (const job of c.scrape_configs)
    for (const s of job.static_configs) {
      const name = s.labels?.process ?? '';
      if (!(name in ports)) throw new Error(`ops/prometheus-local.yml targets ${s.targets.join(', ')}: no local port for process "${name}"`);
      s.targets = s.targets.map((t) => {
        if (!t.startsWith('127.0.0.1:')) throw new Error(`ops/prometheus-local.yml target ${t}: expected 127.0.0.1`);
        return `127.0.0.1:${ports[name]}`;
      });
    }
  return c;
}

export interface RunningPrometheus {
  url: string;
  logs: string[];
  stop: () => Promise<void>;
}

/** How long a started Prometheus may take to answer /-/ready. */
const READY_MS = 30_000;

export async function startPrometheus(config: PromConfig): Promise<RunningPrometheus> {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgx-prometheus-'));
  const file = path.join(dir, 'prometheus.yml');
  writeFileSync(file, stringify(config));
  const port = await freePort();
  const child: ChildProcess = spawn(PROMETHEUS, [`--config.file=${file}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  child.stdout!.on('data', (b: Buffer) => logs.push(b.toString()));
  child.stderr!.on('data', (b: Buffer) => logs.push(b.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // ready before a test asks it anything: a Prometheus that exits or never listens is reported as
  // such (exit status, its output), not as the test's own wait timing out on "fetch failed"
  const deadline = Date.now() + READY_MS;
  for (;;) {
    const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { url, logs, stop };
    const gone = child.exitCode !== null || child.signalCode !== null;
    if (gone || Date.now() > deadline) {
      await stop();
      const how = gone ? `exited (code ${child.exitCode}, signal ${child.signalCode})` : `still not ready after ${READY_MS / 1000} s`;
      throw new Error(`prometheus on ${url} ${how}; its output: ${logs.join('') || '(none)'}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export const prometheusPresent = () => existsSync(PROMETHEUS) && existsSync(PROMTOOL);

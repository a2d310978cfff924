// A real trace backend for the tracing test: Zipkin's server (one executable jar from Maven
// Central, scripts/zipkin/pom.xml, resolved once into .local/zipkin/), in-memory storage, on a
// free port of its own, ended with the test (and with this process if the test is killed).
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { endWithThisProcess, waitFor } from './processes.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const DIR = join(ROOT, '.local/zipkin');
const JAVA = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin/java') : 'java';

/** Why the backend cannot run here (printed as SKIPPED(<why>)), or null. */
export function zipkinMissing(): string | null {
  if (spawnSync(JAVA, ['-version'], { stdio: 'ignore' }).status !== 0) return 'no java';
  if (!jarPath() && spawnSync('mvn', ['-v'], { stdio: 'ignore' }).status !== 0) return 'no maven to fetch the Zipkin server';
  return null;
}

const jarPath = () => (existsSync(DIR) ? readdirSync(DIR).find((f) => /^zipkin-server-.*-exec\.jar$/.test(f)) : undefined);

async function jar(): Promise<string> {
  if (!jarPath()) await run('mvn', ['-B', '-q', '-f', join(ROOT, 'scripts/zipkin/pom.xml'), 'dependency:copy-dependencies', `-DoutputDirectory=${DIR}`], { timeout: 300_000 });
  const found = jarPath();
  if (!found) throw new Error(`scripts/zipkin/pom.xml resolved no zipkin-server exec jar into ${DIR}`);
  return join(DIR, found);
}

const freePort = () =>
  new Promise<number>((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });

export interface Zipkin {
  url: string;
  /** Where the gateway's exporter sends (OTEL_EXPORTER_ZIPKIN_ENDPOINT). */
  spansEndpoint: string;
  /** The spans of one trace (Zipkin v2 JSON), [] while it has none. */
  trace(traceId: string): Promise<ZipkinSpan[]>;
  stop(): Promise<void>;
}

export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  kind?: string;
  timestamp: number;
  duration?: number;
  localEndpoint?: { serviceName?: string };
  tags?: Record<string, string>;
  annotations?: { timestamp: number; value: string }[];
}

/** Starts Zipkin (in-memory) and waits until it answers. */
export async function startZipkin(): Promise<Zipkin> {
  const path = await jar();
  const port = await freePort();
  const child: ChildProcess = spawn(JAVA, ['-Xms64m', '-Xmx256m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-jar', path, `--server.port=${port}`, '--server.address=127.0.0.1'], {
    env: { ...process.env, STORAGE_TYPE: 'mem', QUERY_PORT: String(port), SELF_TRACING_ENABLED: 'false', JAVA_OPTS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  endWithThisProcess(child.pid);
  const out: string[] = [];
  child.stdout!.on('data', (b: Buffer) => out.push(b.toString()));
  child.stderr!.on('data', (b: Buffer) => out.push(b.toString()));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const get = async (p: string) => fetch(`${url}${p}`, { signal: AbortSignal.timeout(5_000) });
  await waitFor('zipkin answers /health', async () => (child.exitCode === null ? (await get('/health')).ok : Promise.reject(new Error(`zipkin exited: ${out.join('').slice(-2000)}`))), 120_000, 500);
  return {
    url,
    spansEndpoint: `${url}/api/v2/spans`,
    trace: async (traceId) => {
      const r = await get(`/api/v2/trace/${traceId}`);
      return r.ok ? ((await r.json()) as ZipkinSpan[]) : [];
    },
    stop: async () => {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    },
  };
}

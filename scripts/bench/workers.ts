// The real worker processes of the end-to-end benchmarks, started as `npm start` starts them (the
// Procfile's lines, scripts/start.ts processEnv), against the benchmark databases, with their own
// topics and HTTP ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { loadConfig, slices, type Config } from '../../lib/core/config.ts';
import { kafkaClientConfig, kafkaOptions } from '../../lib/dispatch/kafka.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { BENCH_INBOX, BENCH_PG, BENCH_REDIS } from './setup.ts';
import { fillCompileCache, processEnv, procfileArgs } from '../start.ts';

export const KAFKA = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';

/** Brokers, TLS and SASL of a bench's own Kafka clients: the gateway's factory (lib/dispatch/kafka.ts), from the environment's KAFKA_* settings. */
export function benchKafka(config: Config = loadConfig({ ...process.env, KAFKA_BROKERS: KAFKA })) {
  return kafkaClientConfig(kafkaOptions(slices(config).kafka, createLogger('bench', 'silent')));
}

export interface Worker {
  name: string;
  child: ChildProcess;
  logs: string[];
  exited: Promise<number | null>;
}

let cacheFilled = false;

/** A worker process as `npm start` starts it: the Procfile's node flags, scripts/start.ts processEnv (its compile cache filled first), on the bench's stores. */
export function startWorker(name: string, port: number, topics: { msg: string; schd: string; state?: string }, extra: Record<string, string> = {}): Worker {
  const started = processEnv(process.env);
  if (!cacheFilled) fillCompileCache(started);
  cacheFilled = true;
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...started,
    DATABASE_URL: BENCH_PG,
    INBOX_URL: BENCH_INBOX,
    REDIS_URL: BENCH_REDIS,
    KAFKA_BROKERS: KAFKA,
    MSGX_KAFKA_MSG_TOPIC: topics.msg,
    MSGX_KAFKA_SCHD_TOPIC: topics.schd,
    ...(topics.state ? { MSGX_KAFKA_STATE_TOPIC: topics.state } : {}),
    MSGX_REQUESTS_DAILY_SCHEDULE_AT: '',
    MSGX_LOG_LEVEL: process.env.BENCH_LOG ?? 'warn',
    [`MSGX_HTTP_PORT_${name.replace(/-/g, '_').toUpperCase()}`]: String(port),
    ...extra,
  };
  const child = spawn(process.execPath, procfileArgs(name), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const collect = (buf: Buffer) => logs.push(...buf.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  return { name, child, logs, exited: new Promise((r) => child.on('exit', (code, signal) => r(code ?? (signal ? -1 : null)))) };
}

export async function stopWorkers(ws: Worker[]): Promise<Record<string, number | null | string>> {
  for (const w of ws) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
  const out: Record<string, number | null | string> = {};
  await Promise.all(
    ws.map(async (w) => {
      const code = await Promise.race([w.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 20_000))]);
      if (code === 'timeout') w.child.kill('SIGKILL');
      out[w.name] = code === 'timeout' ? 'killed after 20 s' : code;
    }),
  );
  return out;
}

export async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A run failed: stop the workers and print the end of each one's log, then rethrow. */
export async function failWithLogs(workers: Worker[], e: unknown): Promise<never> {
  await stopWorkers(workers);
  for (const w of workers) console.error(`--- ${w.name}\n${w.logs.slice(-20).join('\n')}`);
  throw e;
}

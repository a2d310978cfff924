// Real worker processes for end-to-end tests (the same entry files as the Procfile).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describeConfig } from '../../lib/core/config.ts';
import { testEnv } from './env.ts';
import { currentSlot } from './slots.ts';

export interface Proc {
  name: string;
  child: ChildProcess;
  port: number;
  logs: string[];
  exited: Promise<number | null>;
}

// 1,000 ports per worker slot from TEST_PORT_BASE, or from 20000 at a random start inside the
// slot's range: several test runs may share the machine (a fixed base made them scrape each other).
const PORT_SPAN = 1000;
let nextPort = process.env.TEST_PORT_BASE ? Number(process.env.TEST_PORT_BASE) + (currentSlot() - 1) * PORT_SPAN : 20000 + (currentSlot() - 1) * PORT_SPAN + Math.floor(Math.random() * 90) * 10;

/** The installation's default topics (msgx.kafka.*-topic) and their variables. */
const TOPIC_DEFAULTS = describeConfig().filter((c) => /^msgx\.kafka\.(msg|schd|state)-topic$/.test(c.key));

export function startWorker(name: string, env: Record<string, string> = {}): Proc {
  const port = nextPort++;
  const portKey = `MSGX_HTTP_PORT_${name.replace(/-/g, '_').toUpperCase()}`;
  const full = { ...process.env, ...testEnv({ [portKey]: String(port), ...env }, 'info') };
  // every process uses topics of the test's own (test/support/env.ts TEST_TOPICS), never an
  // installation's defaults on the machine's broker (`npm start` and the README's sample fill them);
  // a dispatcher creates its topic and sends to it: the test names it (uniqueTopic), so that it is deleted afterwards
  for (const d of TOPIC_DEFAULTS)
    if (full[d.env] === d.default && full.KAFKA_BROKERS === testEnv().KAFKA_BROKERS)
      throw new Error(`startWorker: ${name} would use the installation's topic ${d.default} (${d.env}) on the machine's broker`);
  const target = /^(msg|schd|state)-dispatch$/.exec(name)?.[1];
  if (target && !(`MSGX_KAFKA_${target.toUpperCase()}_TOPIC` in env || `msgx.kafka.${target}-topic` in env))
    throw new Error(`startWorker: ${name} needs a topic of the test's own (MSGX_KAFKA_${target.toUpperCase()}_TOPIC)`);
  const child = spawn(process.execPath, [`workers/${name}.ts`], {
    env: full,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const collect = (b: Buffer) => logs.push(...b.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { name, child, port, logs, exited };
}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

export const hasLog = (p: Proc, text: string) => p.logs.some((l) => l.includes(text));

/** Waits for a log line of p; on timeout the error carries p's exit code and its last lines (what it was doing instead). */
export async function waitForLog(p: Proc, text: string, what = `"${text}" from ${p.name}`, timeoutMs = 30_000): Promise<void> {
  try {
    await waitFor(what, () => hasLog(p, text), timeoutMs);
  } catch (e) {
    const tail = p.logs.slice(-40).join('\n');
    throw new Error(`${(e as Error).message}\n${p.name} exit code ${p.child.exitCode ?? 'none (running)'}; its last ${Math.min(40, p.logs.length)} of ${p.logs.length} line(s):\n${tail}`);
  }
}

/**
 * A process group a test started outside its own — detached (its own group, so that a signal to
 * -pid is Ctrl-C in a terminal) or daemonized by the server itself (pg_ctl, Redis, scripts/services'
 * Kafka: a session of their own) — is out of reach of the signal that ends an interrupted run
 * (`npm test` ends the process group of each vitest run: scripts/test.ts) and of the test's
 * afterAll, which never runs when its worker is killed. A watcher ends the group once this test
 * process is gone; it leaves as soon as the group has ended by itself. `leader`: the group
 * leader's pid, or its pid file (first line).
 */
export function endWithThisProcess(leader: number | string | undefined): void {
  let group = typeof leader === 'string' ? Number(readFileSync(leader, 'utf8').split('\n')[0]) : leader;
  if (!group || !Number.isInteger(group) || group <= 1) return;
  group = Math.trunc(group);
  const watch = `while kill -0 ${process.pid} 2>/dev/null && kill -0 -${group} 2>/dev/null; do sleep 1; done; kill -0 ${process.pid} 2>/dev/null || kill -KILL -${group} 2>/dev/null; exit 0`;
  spawn('sh', ['-c', watch], { detached: true, stdio: 'ignore' }).unref();
}

export async function stopAll(procs: Proc[]): Promise<void> {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 10_000))])));
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
}

export async function metricValue(p: Proc, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${p.port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return line ? Number(line.split(' ').pop()) : undefined;
}

/**
 * One command run to its end, as a person runs it: its exit code and everything it printed. Read on
 * 'close', after stdout and stderr ended ('exit' can come before the last bytes are read).
 */
export function runCli(cmd: string, args: string[], env: Record<string, string | undefined>): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

// `npm start` as a person runs it: the real runner (scripts/start.ts under npm) on the real
// Procfile, in its own process group like a terminal's foreground job, on this file's own ports,
// test databases and Kafka topics. One worker killed → the set stops within 5 s, non-zero exit, a
// line naming it. Ctrl-C (SIGINT to the whole group) → everything gone within 5 s. No warning
// noise. While the set runs, Debian's Prometheus scrapes it with ops/prometheus-local.yml: every target
// up, every alert rule healthy.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProcfile } from '../../scripts/start.ts';
import { TEST_KAFKA, testEnv } from '../support/env.ts';
import { endWithThisProcess, waitFor } from '../support/processes.ts';
import { openServices, resetDomain, resetPipeline } from '../support/services.ts';
import { freePort } from '../support/ports.ts';
import { localConfig, prometheusPresent, PROMETHEUS, startPrometheus } from '../support/prometheus.ts';

const PROCS = parseProcfile(readFileSync('Procfile', 'utf8')).map((e) => e.name);
const runId = `${process.pid}-${Date.now()}`;
const TOPICS = { msg: `test.runner.msg.${runId}`, schd: `test.runner.schd.${runId}`, state: `test.runner.state.${runId}` };
const WARNING = /DeprecationWarning|ExperimentalWarning|\(node:\d+\) |npm (warn|WARN|ERR)/;

interface Started {
  child: ChildProcess;
  out: string[];
  ports: Record<string, number>;
  pids: Record<string, number>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}
const started: Started[] = [];

/** Whole lines of a child's stdout and stderr (chunks do not end at line ends). */
function collectLines(child: ChildProcess): string[] {
  const out: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = '';
    stream.on('data', (b: Buffer) => {
      const lines = (partial + b.toString()).split('\n');
      partial = lines.pop()!;
      out.push(...lines);
    });
    stream.on('end', () => partial && out.push(partial));
  }
  return out;
}

async function npmStart(): Promise<Started> {
  const ports: Record<string, number> = {};
  for (const name of PROCS) ports[name] = await freePort();
  const env = testEnv(
    {
      MSGX_KAFKA_MSG_TOPIC: TOPICS.msg,
      MSGX_KAFKA_SCHD_TOPIC: TOPICS.schd,
      MSGX_KAFKA_STATE_TOPIC: TOPICS.state,
      MSGX_KAFKA_PARTITIONS: '1',
      // as `npm start` runs for a person: development mode with the token `dev`, reads closed (the
      // scrape below proves ops/prometheus-local.yml's credential)
      MSGX_API_TOKEN: '',
      MSGX_HTTP_ANONYMOUS_READS: '',
      ...Object.fromEntries(PROCS.map((n) => [`MSGX_HTTP_PORT_${n.replace(/-/g, '_').toUpperCase()}`, String(ports[n])])),
    },
    'info',
  );
  // detached: its own process group, so SIGINT to -pid is what Ctrl-C in a terminal sends.
  const child = spawn('npm', ['start'], { env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  endWithThisProcess(child.pid);
  const out = collectLines(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((r) => child.once('exit', (code, signal) => r({ code, signal, at: Date.now() })));
  const s: Started = { child, out, ports, pids: {}, exited };
  started.push(s);
  // Each process logs `<name> starting` with its pid; all eight answer /healthz.
  await waitFor(
    'every process started',
    () => {
      for (const name of PROCS) {
        const line = out.find((l) => l.includes(`"msg":"${name} starting"`));
        if (line) s.pids[name] = JSON.parse(line.slice(line.indexOf('{'))).pid;
      }
      return Object.keys(s.pids).length === PROCS.length;
    },
    90_000,
    200,
  );
  // on a time-out: which process answered what, and the last lines of the set
  let last: Record<string, number | string> = {};
  await waitFor(
    'every /healthz answers 200',
    async () => {
      const st = await Promise.all(
        PROCS.map((n) =>
          fetch(`http://127.0.0.1:${ports[n]}/healthz`).then(
            async (r) => (r.status === 200 ? 200 : `${r.status} ${(await r.text()).slice(0, 400)}`),
            (e: Error & { cause?: { code?: string } }) => `no answer (${e.cause?.code ?? e.message})`,
          ),
        ),
      );
      last = Object.fromEntries(PROCS.map((n, i) => [n, st[i]]));
      return st.every((c) => c === 200);
    },
    60_000,
    250,
  ).catch((e: Error) => {
    throw new Error(`${e.message}; last answers ${JSON.stringify(last)}; last lines:\n${out.slice(-40).join('\n')}`);
  });
  return s;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function deleteTopics(): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'msgx-runner-test', brokers: [TEST_KAFKA], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const mine = Object.values(TOPICS).filter((t) => existing.has(t));
    if (mine.length) await admin.deleteTopics({ topics: mine });
  } finally {
    await admin.disconnect();
  }
}

afterAll(async () => {
  for (const s of started) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      try {
        process.kill(-s.child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    for (const pid of Object.values(s.pids)) if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
  await deleteTopics();
}, 60_000);

if (!prometheusPresent()) console.warn(`SKIPPED(no-prometheus): ${PROMETHEUS} is absent; .ci/run installs Debian's prometheus for the scrape check`);

describe('npm start (scripts/start.ts on the Procfile)', () => {
  // This file's topics are new: an outbox left by earlier files recorded SENT offsets on other
  // topics, which msg-dispatch's topic check would rightly call a loss (docs/operations.md
  // "Derived stores: the msg topic") and answer 503. An inbox left marked processed by an earlier
  // file on the slot (restore, shadow) would hold intake and the pump as "Postgres is behind".
  beforeAll(async () => {
    const s = await openServices();
    try {
      await resetPipeline(s);
      await resetDomain(s);
    } finally {
      await s.close();
    }
  });
  it('the Procfile is the one list: eight processes, each a workers/ entry', () => {
    expect(PROCS).toEqual(['intake', 'pump', 'backfill', 'api', 'msg-dispatch', 'schd-dispatch', 'state-dispatch', 'retention']);
    expect(() => parseProcfile('pump node x\n')).toThrow(/not "name: command"/);
    expect(() => parseProcfile('# nothing\n\n')).toThrow(/no process/);
  });

  it('a process that ignores SIGTERM is SIGKILLed, so the set is still down within 5 s (death and Ctrl-C)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgx-runner-'));
    const stubborn = `node -e "process.on('SIGTERM',()=>{});process.on('SIGINT',()=>{});console.log('pid',process.pid);setInterval(()=>{},1000)"`;
    try {
      for (const how of ['death', 'ctrl-c'] as const) {
        const procfile = path.join(dir, `Procfile.${how}`);
        writeFileSync(procfile, `# test\nstubborn: ${stubborn}\n${how === 'death' ? 'short: node -e "setTimeout(()=>process.exit(3),1500)"' : 'idle: node -e "setInterval(()=>{},1000)"'}\n`);
        const child = spawn(process.execPath, ['scripts/start.ts', '--procfile', procfile], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' } });
        endWithThisProcess(child.pid);
        const out = collectLines(child);
        const exited = new Promise<{ code: number | null; at: number }>((r) => child.once('exit', (code) => r({ code, at: Date.now() })));
        const pidLine = await waitFor('the stubborn process started', () => out.find((l) => /^\[stubborn\] pid \d+$/.test(l)), 20_000, 50).catch((e: Error) => {
          throw new Error(`${e.message}; output:\n${out.join('\n')}`);
        });
        const pid = Number(/pid (\d+)/.exec(pidLine)![1]);
        let from = Date.now();
        if (how === 'ctrl-c') process.kill(-child.pid!, 'SIGINT');
        else from = await waitFor('short exits', () => out.some((l) => l.startsWith('start: short exited (exit code 3)')) && Date.now(), 20_000, 20);
        const { code, at } = await Promise.race([exited, new Promise<never>((_, j) => setTimeout(() => j(new Error(`runner still running:\n${out.join('\n')}`)), 10_000))]);
        expect(at - from).toBeLessThan(5000);
        expect(alive(pid)).toBe(false);
        expect(out).toContainEqual(expect.stringMatching(/^start: stubborn still running 3000 ms after .*: SIGKILL$/));
        if (how === 'death') {
          expect(code).toBe(1);
          expect(out).toContainEqual('start: stopped: short died first; SIGKILLed stubborn; exit 1');
        } else expect(code).toBe(130);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('one worker killed: the whole set stops within 5 s, exit non-zero, a line names it', async () => {
    const s = await npmStart();
    const killedAt = Date.now();
    process.kill(s.pids.pump, 'SIGKILL');
    const { code, at } = await Promise.race([
      s.exited,
      new Promise<never>((_, j) => setTimeout(() => j(new Error(`npm start still running 10 s after the kill:\n${s.out.slice(-20).join('\n')}`)), 10_000)),
    ]);
    expect(at - killedAt).toBeLessThan(5000);
    expect(code).not.toBe(0);
    expect(s.out).toContainEqual(expect.stringMatching(/^start: pump exited \(signal SIGKILL\) without being asked to/));
    expect(s.out).toContainEqual(expect.stringMatching(/^start: stopped: pump died first; exit 1/));
    for (const [name, pid] of Object.entries(s.pids)) expect({ name, alive: alive(pid) }).toEqual({ name, alive: false });
    expect(s.out.filter((l) => WARNING.test(l))).toEqual([]);
  }, 150_000);

  it('Ctrl-C stops every process within 5 s; meanwhile Prometheus sees every target up and every rule healthy', async () => {
    const s = await npmStart();
    if (prometheusPresent()) {
      const prom = await startPrometheus(localConfig(s.ports));
      try {
        // on a time-out: each target's last health, error and scrape duration as Prometheus saw them
        let seen: string[] = [];
        const targets = await waitFor(
          'every target up',
          async () => {
            const r = (await (await fetch(`${prom.url}/api/v1/targets`)).json()) as {
              data: { activeTargets: { labels: Record<string, string>; health: string; lastError: string; lastScrapeDuration: number }[] };
            };
            const t = r.data.activeTargets;
            seen = t.map((x) => `${x.labels.process}: ${x.health} in ${Math.round(x.lastScrapeDuration * 1000)} ms${x.lastError ? ` (${x.lastError})` : ''}`);
            return t.length === PROCS.length && t.every((x) => x.health === 'up') && t;
          },
          30_000,
          500,
        ).catch((e) => {
          throw new Error(`${(e as Error).message}\ntargets:\n${seen.join('\n')}\nprometheus: ${prom.logs.join('')}`);
        });
        expect(targets.map((t) => t.labels.process).sort()).toEqual([...PROCS].sort());
        expect(new Set(targets.map((t) => t.labels.job))).toEqual(new Set(['msgx']));
        const rules = await waitFor(
          'every rule evaluated',
          async () => {
            const r = (await (await fetch(`${prom.url}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] } };
            const all = r.data.groups.flatMap((g) => g.rules);
            return all.length > 0 && all.every((x) => x.health !== 'unknown') && all;
          },
          30_000,
          500,
        );
        const shipped = (readFileSync('ops/prometheus-alerts.yml', 'utf8').match(/^\s+- alert: /gm) ?? []).length;
        expect(rules).toHaveLength(shipped);
        expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
      } finally {
        await prom.stop();
      }
    }
    // the compose healthcheck command, against the running set
    const hc = (name: string) =>
      spawnSync(process.execPath, ['scripts/healthcheck.ts', name], {
        env: { ...process.env, [`MSGX_HTTP_PORT_${name.replace(/-/g, '_').toUpperCase()}`]: String(s.ports[name] ?? 1) },
        encoding: 'utf8',
      });
    for (const name of PROCS) expect({ name, status: hc(name).status }).toEqual({ name, status: 0 });
    expect(hc('pump').stdout).toMatch(/^pump: 200 \{"ok":true/);
    expect(hc('nobody').status).toBe(2);

    const sentAt = Date.now();
    process.kill(-s.child.pid!, 'SIGINT');
    const { code, signal, at } = await Promise.race([s.exited, new Promise<never>((_, j) => setTimeout(() => j(new Error('npm start still running 10 s after Ctrl-C')), 10_000))]);
    await waitFor('every process gone', () => Object.values(s.pids).every((pid) => !alive(pid)), 5000, 50);
    expect(Date.now() - sentAt).toBeLessThan(5000);
    expect(at - sentAt).toBeLessThan(5000);
    // The runner exits 0; npm, which got the same SIGINT from the "terminal", ends by that signal
    // (a shell shows 130), as any foreground job stopped with Ctrl-C.
    expect(code === 0 || signal === 'SIGINT').toBe(true);
    expect(s.out).toContainEqual(expect.stringMatching(/^start: stopped after SIGINT$/));
    expect(s.out.filter((l) => WARNING.test(l))).toEqual([]);
    expect(hc('pump').status).toBe(1); // nothing answers any more
  }, 180_000);
});

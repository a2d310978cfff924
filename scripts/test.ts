// `npm test`'s runner (after `scripts/services up`). Without arguments, three vitest runs:
//
//   1. the side-by-side files on every slot but the last, under nice 10, and at the same time
//      2. the ALONE files (and LANE's) one at a time on the last slot (a vitest of its own, TEST_SLOT_OFFSET);
//   3. then SOLO's files, with the machine to themselves (once it is idle).
//
// ALONE's files mostly wait (an outage, a take-over, a stop): one after the other they took a third
// of the run with a core idle. Beside the side-by-side files they fill that core; the niceness
// gives their own processes the CPU first, so that their bounds of seconds hold. The servers are
// shared and not reniced (a test never reconfigures a service it did not start). ALONE's output
// is kept in .local/test-logs/alone.log and printed when that run ends, so the two do not interleave.
//
// With arguments (`npm test -- test/unit/x.test.ts`), or with one slot, one plain `vitest run`.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { setPriority } from 'node:os';
import { resolve } from 'node:path';
import { slotCount } from '../test/support/slots.ts';
import { loadLocalEnv } from './args.ts';

const VITEST = resolve('node_modules/vitest/vitest.mjs');
const LOGS = resolve('.local/test-logs');
const NICE = 10;
const QUIET_WAIT_S = 60;

interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

/** One vitest run; its output to the terminal, or to `logFile`. Resolves to its exit code and counts. */
function vitest(name: string, args: string[], env: Record<string, string>, opts: { logFile?: string; nice?: number } = {}): Promise<{ code: number; counts?: Counts }> {
  mkdirSync(LOGS, { recursive: true });
  const summary = `${LOGS}/${name}.summary.json`;
  rmSync(summary, { force: true });
  // a process group of its own: an interrupted run ends the whole group (the vitest workers and
  // every server, broker and CLI its tests started), not only vitest, whose killed workers would
  // leave their children running
  const child = spawn(process.execPath, [VITEST, 'run', ...args], {
    env: { ...process.env, ...env, TEST_SUMMARY_FILE: summary },
    stdio: ['ignore', opts.logFile ? 'pipe' : 'inherit', opts.logFile ? 'pipe' : 'inherit'],
    detached: true,
  });
  // before vitest forks its workers (it takes far longer than this to load): they inherit it
  if (opts.nice && child.pid) setPriority(child.pid, opts.nice);
  if (opts.logFile) {
    const out = createWriteStream(opts.logFile);
    child.stdout!.pipe(out);
    child.stderr!.pipe(out);
  }
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    signalGroup(child.pid, signal);
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
  return new Promise((done) =>
    child.on('exit', (code, signal) => {
      process.off('SIGINT', stop).off('SIGTERM', stop);
      // what is left of an interrupted run's group (a broker still shutting down) goes at once
      if (stopping) signalGroup(child.pid, 'SIGKILL');
      let counts: Counts | undefined;
      try {
        counts = JSON.parse(readFileSync(summary, 'utf8'));
      } catch {
        counts = undefined; // vitest ended before its reporter ran: the exit code says why
      }
      done({ code: code ?? (signal ? 1 : 0), counts });
    }),
  );
}

/** A signal to a vitest run's process group (nothing when it has ended). */
function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  try {
    if (pid) process.kill(-pid, signal);
  } catch {
    // the group has ended
  }
}

/** The machine's share of idle CPU time over one second (/proc/stat; undefined where there is none). */
async function idleShare(): Promise<number | undefined> {
  const sample = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { idle: f[3] + (f[4] ?? 0), total: f.reduce((a, b) => a + b, 0) };
  };
  try {
    const a = sample();
    await new Promise((r) => setTimeout(r, 1000));
    const b = sample();
    return (b.idle - a.idle) / Math.max(1, b.total - a.total);
  } catch {
    return undefined;
  }
}

/**
 * SOLO's bounds are fractions of a second: it starts once the machine is ≥ 85 % idle over a second
 * (the servers may still be working off the side-by-side files: autovacuum, a checkpoint), or after
 * QUIET_WAIT_S with a line that says so.
 */
async function quiet(): Promise<string> {
  const t0 = Date.now();
  for (;;) {
    const idle = await idleShare();
    const waited = Math.round((Date.now() - t0) / 1000);
    if (idle === undefined) return 'no /proc/stat: SOLO starts at once';
    if (idle >= 0.85) return `the machine ${Math.round(idle * 100)} % idle after ${waited} s`;
    if (waited >= QUIET_WAIT_S) return `the machine still ${Math.round((1 - idle) * 100)} % busy after ${waited} s; SOLO starts anyway`;
  }
}

/** Set by Ctrl-C or a SIGTERM: the runs under way are stopped, and no later run starts. */
let interrupted: NodeJS.Signals | undefined;
process.once('SIGINT', () => (interrupted = 'SIGINT')).once('SIGTERM', () => (interrupted = 'SIGTERM'));

async function main(): Promise<number> {
  loadLocalEnv(); // the logins scripts/services made (docs/decisions.md "Local logins"), for the runs' environment
  const args = process.argv.slice(2);
  const slots = slotCount();
  if (args.length > 0 || slots < 2) return (await vitest('all', args, {})).code;

  const aloneLog = `${LOGS}/alone.log`;
  const sideBySide = vitest('side-by-side', ['--project', 'side-by-side'], { TEST_WORKERS: String(slots - 1) }, { nice: NICE });
  const alone = vitest('alone', ['--project', 'alone'], { TEST_WORKERS: '1', TEST_SLOT_OFFSET: String(slots - 1) }, { logFile: aloneLog });
  const first = await sideBySide;
  const second = await alone;
  process.stdout.write(`\n--- the ALONE and LANE files, run beside the side-by-side ones on slot ${slots} (${aloneLog}) ---\n`);
  process.stdout.write(readFileSync(aloneLog, 'utf8'));
  if (interrupted) {
    process.stdout.write(`\n${interrupted}: SOLO's files not started\n`);
    return 130;
  }
  process.stdout.write(`\n--- SOLO: ${await quiet()} ---\n`);
  const third = await vitest('solo', ['--project', 'solo'], { TEST_WORKERS: '1' });

  const runs = [first, second, third];
  const total = { passed: 0, failed: 0, skipped: 0 };
  for (const r of runs) for (const k of ['passed', 'failed', 'skipped'] as const) total[k] += r.counts?.[k] ?? 0;
  const broken = runs.filter((r) => r.code !== 0 || !r.counts).length;
  process.stdout.write(`\nAll three runs: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped${broken ? ` (${broken} run(s) ended non-zero)` : ''}\n`);
  return broken ? 1 : 0;
}

process.exitCode = await main();

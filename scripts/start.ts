// `npm start`'s process runner: every line of the Procfile (the one list of processes) under
// concurrently. Fails loudly: when any process exits by itself (crash, kill, exit 0 or not) the
// others get SIGTERM, anything still alive after KILL_AFTER_MS gets SIGKILL, and the runner exits
// 1 with a line naming the process that died. Ctrl-C / SIGTERM stop everything the same way and
// exit 0 (130/143 if something had to be SIGKILLed). Nothing is restarted: see docs/decisions.md.
//
//   node scripts/start.ts [--up] [--procfile Procfile]   (--help: usage)
// `npm start` is `MSGX_DEV_MODE=… node scripts/start.ts --up`: services up and migrations first, so that
// `npm start -- --help` answers before anything is started or migrated.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { cliArgs, loadLocalEnv } from './args.ts';
import { concurrently, type CloseEvent, type Command } from 'concurrently';

/** The processes' own graceful shutdown gets 3 s (it normally takes well under 1 s); with the runner's and npm's exit the whole set is down within 5 s even on a loaded machine. */
export const KILL_AFTER_MS = 3000;

/**
 * What every process gets in its environment unless it is set already (docs/decisions.md
 * "Footprint"): Node's compile cache (filled before the start: scripts/compile-cache.ts, so no
 * process loads the type stripper), a 1 MiB young-generation semi-space and two malloc arenas
 * (each keeps less memory resident at rest). The Dockerfile sets the same. A flag on a Procfile
 * line overrides NODE_OPTIONS: the pump's 8 MiB semi-space (docs/decisions.md "Footprint").
 */
export function processEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const options = env.NODE_OPTIONS ?? '';
  return {
    NODE_COMPILE_CACHE: env.NODE_COMPILE_CACHE ?? resolve('.local/compile-cache'),
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? '2',
    NODE_OPTIONS: /--max-semi-space-size/.test(options) ? options : `${options} --max-semi-space-size=1`.trim(),
  };
}

/** Fill the compile cache (scripts/compile-cache.ts) with `env` = processEnv's: before processes start as `npm start` starts them. A failure only leaves the cache cold. */
export function fillCompileCache(env: Record<string, string>, stdio: 'inherit' | 'ignore' = 'ignore'): void {
  spawnSync(process.execPath, ['scripts/compile-cache.ts'], { stdio, env: { ...process.env, ...env } });
}

export interface ProcfileEntry {
  name: string;
  command: string;
}

/** Procfile lines `name: command`; blank lines and `#` comments are skipped. */
export function parseProcfile(text: string): ProcfileEntry[] {
  const out: ProcfileEntry[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z0-9_-]+):\s*(.+)$/.exec(line);
    if (!m) throw new Error(`Procfile line ${i + 1} is not "name: command": ${raw}`);
    if (out.some((e) => e.name === m[1])) throw new Error(`Procfile line ${i + 1}: process ${m[1]} listed twice`);
    out.push({ name: m[1], command: m[2] });
  }
  if (out.length === 0) throw new Error('the Procfile lists no process');
  return out;
}

/** The arguments after `node` of the Procfile's `name` line (node's flags and the entry file): how benches start a process as `npm start` does. */
export function procfileArgs(name: string, procfile = 'Procfile'): string[] {
  const entry = parseProcfile(readFileSync(procfile, 'utf8')).find((e) => e.name === name);
  const words = entry?.command.split(/\s+/) ?? [];
  if (words[0] !== 'node') throw new Error(`${procfile} has no line "${name}: node …"`);
  return words.slice(1);
}

const SPEC = {
  name: 'start',
  valued: ['--procfile'],
  flags: ['--up'],
  positional: 'none' as const,
  usage: `usage: npm start   (node scripts/start.ts [--up] [--procfile Procfile])
  Runs every process of the Procfile under one runner: each line's log prefixed by its name;
  Ctrl-C stops them all. When any process exits by itself the others are stopped and the runner
  exits 1 naming it. Nothing is restarted.
  --up              first start (or reuse) the local services (scripts/services up) and migrate
  (npm start also asks for development mode, MSGX_DEV_MODE=true, unless MSGX_DEV_MODE is set)
  --procfile FILE   another Procfile (default Procfile)`,
};

/** services up, then the migrations, as `npm start` did in its script line; exits on a failure. */
function up(): void {
  for (const [cmd, args] of [
    ['scripts/services', ['up']],
    [process.execPath, ['scripts/migrate.ts']],
  ] as const) {
    const r = spawnSync(cmd, [...args], { stdio: 'inherit' });
    if (r.status !== 0) process.exit(r.status ?? 1);
    // a first start made the logins just now: migrate and the processes use them (what is set already wins)
    if (cmd === 'scripts/services') loadLocalEnv();
  }
}

function main(): void {
  const args = cliArgs(SPEC);
  if (args.flags.has('--up')) up();
  const procfile = args.options['--procfile'] ?? 'Procfile';
  const entries = parseProcfile(readFileSync(procfile, 'utf8'));
  const say = (text: string) => process.stderr.write(`start: ${text}\n`);

  const env = processEnv(process.env);
  fillCompileCache(env, 'inherit');

  // `exec` makes /bin/sh replace itself with the process: signals reach it, not a shell wrapper.
  const { result, commands } = concurrently(
    entries.map((e) => ({ name: e.name, command: `exec ${e.command}`, env })),
    { prefix: 'name', padPrefix: true, handleInput: false },
  );

  let asked: string | undefined; // the signal that asked us to stop
  let died: CloseEvent | undefined; // the first process that exited without being asked to
  const forced: string[] = []; // processes we had to SIGKILL
  const alive = () => commands.filter((c: Command) => Boolean(c.pid && c.process));
  const forceKill = (why: string) =>
    setTimeout(() => {
      const left = alive();
      if (left.length) say(`${left.map((c) => c.name).join(', ')} still running ${KILL_AFTER_MS} ms after ${why}: SIGKILL`);
      for (const c of left) {
        forced.push(c.name);
        c.kill('SIGKILL');
      }
    }, KILL_AFTER_MS).unref();
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(sig, () => {
      if (asked) return;
      asked = sig;
      say(`${sig}: stopping ${alive().length} processes`);
      forceKill(sig); // concurrently itself passes the signal on to every process
    });
  // A terminal's Ctrl-C reaches every process of the group at once: a quick process may exit
  // before our own SIGINT handler has run. A death counts only if no signal follows within 100 ms.
  let deathPending = false;
  for (const c of commands)
    c.close.subscribe((ev: CloseEvent) => {
      if (asked || died || deathPending || ev.killed) return;
      deathPending = true;
      setTimeout(() => {
        if (asked) return;
        died = ev;
        const how = typeof ev.exitCode === 'number' ? `exit code ${ev.exitCode}` : `signal ${ev.exitCode}`;
        say(`${c.name} exited (${how}) without being asked to; stopping the others (nothing restarts it)`);
        for (const other of alive()) other.kill('SIGTERM');
        forceKill(`${c.name} died`);
      }, 100);
    });

  const finish = (): void => {
    if (deathPending && !died && !asked) {
      setTimeout(finish, 150); // the last process died: name it first
      return;
    }
    if (died) {
      say(`stopped: ${died.command.name} died first${forced.length ? `; SIGKILLed ${forced.join(', ')}` : ''}; exit 1`);
      process.exit(1);
    }
    if (forced.length) {
      say(`stopped after ${asked}; SIGKILLed ${forced.join(', ')}`);
      process.exit(asked === 'SIGINT' ? 130 : 143);
    }
    say(`stopped after ${asked ?? 'every process exited'}`);
    process.exit(asked ? 0 : 1);
  };
  result.then(finish, finish);
}

if (import.meta.main) main();

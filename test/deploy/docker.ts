// Helpers of the deployment tests (test/deploy/): Docker and docker-compose as their users run
// them, each call with a deadline, and the host's local CA certificates for builds behind a
// TLS-inspecting proxy.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '../..');

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** A command to its end (or `timeoutMs`, then SIGKILL); never throws. */
export function run(cmd: string, args: string[], o: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; input?: string } = {}): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: o.cwd ?? ROOT, env: o.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${o.timeoutMs} ms)`;
      child.kill('SIGKILL');
    }, o.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      done({ status: null, stdout, stderr: `${stderr}${e.message}` });
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      done({ status, stdout, stderr });
    });
    child.stdin.end(o.input ?? '');
  });
}

/** As run, but a status other than 0 throws with the command's output. */
export async function ok(cmd: string, args: string[], o: Parameters<typeof run>[2] = {}): Promise<string> {
  const r = await run(cmd, args, o);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
  return r.stdout;
}

/**
 * The host's local CA certificates (those `update-ca-certificates` added from
 * /usr/local/share/ca-certificates), PEM text, or '' when there are none: what a build behind a
 * TLS-inspecting proxy must trust (MSGX_BUILD_CA_CERTS of docker-compose.yml).
 */
export function localCaCerts(dir = '/usr/local/share/ca-certificates'): string {
  if (!existsSync(dir)) return '';
  const files: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.crt')) files.push(join(d, e.name));
    }
  };
  walk(dir);
  return files
    .sort()
    .map((f) => readFileSync(f, 'utf8').trim())
    .join('\n');
}

/** Docker answers (the engine runs and this user may use it): undefined, or why not. */
export function dockerMissing(): string | undefined {
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20_000 });
  if (r.error) return `no docker command (${r.error.message})`;
  if (r.status !== 0) return `the Docker engine does not answer (${r.stderr.trim().split('\n')[0]})`;
  return undefined;
}

/** Thrown by a probe of waitFor: no point in waiting on (the process waited for has ended). */
export class GaveUp extends Error {}

/** `probe` every `everyMs` until it returns a value (not undefined / false), or throws GaveUp; else an error after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 1000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      if (e instanceof GaveUp) throw e;
      last = e;
    }
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (last: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

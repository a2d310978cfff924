// A fresh Debian 12 as a new user has it (test/deploy/fresh-machine/Dockerfile): Debian 12 from its
// packages, docs/getting-started.md's one apt line (read from the page), nothing else; no systemd
// (/run empty as after a boot); a clone of this repository at HEAD in /srv. Shared by
// fresh-machine.test.ts (the README's two commands and its sample) and fresh-machine-npm-test.test.ts
// (then `npm test` there, as a new user runs it after the sample).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { GaveUp, localCaCerts, ok, ROOT, run, waitFor } from './docker.ts';

/** Where the user cloned it: readable by the postgres user (tests start Postgres servers of their own as it); /root is not. */
export const APP = '/srv/msgexchange';

/** The page's shell blocks' lines that start with `prefix`, comments removed. */
function docLines(file: string, prefix: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/```sh\n([\s\S]*?)```/g)) for (const l of m[1].split('\n')) if (l.startsWith(prefix)) out.push(l.replace(/\s+#.*$/, '').trim());
  return out;
}
/** The first such line that also holds `holding`; a page without one stops the test at once, naming what it looked for. */
function docLine(file: string, prefix: string, holding = ''): string {
  const line = docLines(file, prefix).find((l) => l.includes(holding));
  if (line === undefined) throw new Error(`${file}: no shell line starting "${prefix}"${holding ? ` and holding "${holding}"` : ''}: the page changed, and this test reads it`);
  return line;
}
export const APT_LINE = docLine('docs/getting-started.md', 'apt-get install');
export const INSTALL_AND_START = docLine('README.md', 'npm install && npm start');
export const INJECT = docLine('README.md', 'npm run inject -- --renumber-seqn examples/sample/');
export const TAIL = docLine('README.md', 'npm run kafka:tail');
export const CURL = docLine('README.md', 'curl -s', 'localhost:8080/flights/990001');

/** One fresh machine (a container named `name`): seconds per step in `times`. */
export class FreshMachine {
  readonly times: Record<string, number> = {};
  private readonly work = mkdtempSync(join(tmpdir(), 'msgx-fresh-'));
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }

  /** A command in the machine, as root in the clone, through bash -lc. */
  sh = (line: string, timeoutMs = 600_000) => run('docker', ['exec', '-w', APP, this.name, 'bash', '-lc', line], { timeoutMs });

  async timed<T>(step: string, f: () => Promise<T>): Promise<T> {
    const t0 = Date.now();
    try {
      return await f();
    } finally {
      this.times[step] = Math.round((Date.now() - t0) / 1000);
    }
  }

  /** The machine made (images built once per input: docker's layer cache), started, the clone copied in. */
  async up(): Promise<void> {
    expect(APT_LINE).toMatch(/^apt-get install -y [a-z0-9 .-]+$/);
    await run('docker', ['rm', '-f', this.name]);
    await this.timed('debian image', () => ok(join(ROOT, 'test/deploy/images/debian.sh'), ['standard'], { timeoutMs: 15 * 60_000 }));
    const image = 'msgx-standin/fresh-debian:bookworm';
    await this.timed('apt line', () =>
      ok('docker', ['build', '-q', '--force-rm', '--build-arg', `APT_LINE=${APT_LINE}`, '--build-arg', `EXTRA_CA_CERTS=${localCaCerts()}`, '-t', image, join(ROOT, 'test/deploy/fresh-machine')], {
        timeoutMs: 40 * 60_000,
      }),
    );
    // a clone of the repository at HEAD, as a new user gets it
    await ok('git', ['clone', '-q', '--no-hardlinks', ROOT, join(this.work, 'msgexchange')]);
    const env = localCaCerts() ? ['-e', 'NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt'] : [];
    await ok('docker', ['run', '-d', '--name', this.name, '--tmpfs', '/run', '--tmpfs', '/tmp', ...env, image]);
    await ok('docker', ['cp', join(this.work, 'msgexchange'), `${this.name}:${APP}`]);
  }

  /** README's "npm install && npm start", in the background (it runs until Ctrl-C), until the api answers. */
  async installAndStart(): Promise<void> {
    await ok('docker', ['exec', '-d', '-w', APP, this.name, 'bash', '-lc', `(${INSTALL_AND_START}) >/root/start.log 2>&1`]);
    await this.timed('npm install && npm start', () =>
      waitFor(
        'the api answers /healthz 200',
        async () => {
          const r = await this.sh('curl -s -o /dev/null -w "%{http_code}" localhost:8080/healthz', 20_000);
          if (r.stdout === '200') return true;
          if ((await this.sh('pgrep -f "[n]pm install|[s]cripts/start[.]ts" >/dev/null && echo running', 20_000)).stdout.trim() !== 'running')
            throw new GaveUp(`npm install && npm start ended:\n${(await this.sh('tail -c 4000 /root/start.log', 20_000)).stdout}`);
          return false;
        },
        30 * 60_000,
        3000,
      ),
    );
  }

  /** README's sample line; resolves when its seven messages are terminal, with their outcomes. */
  async sample(): Promise<string[]> {
    const inject = await this.sh(INJECT, 120_000);
    expect(inject.stdout, inject.stderr).toMatch(/inserted 7 rows into CMINMSGS/);
    const outcome = () => this.sh(`runuser -u postgres -- psql -XAt -d msgx -c "select state || ' ' || coalesce(split_part(reason, ':', 1), '') from proc_state order by msg_id"`, 60_000);
    return waitFor(
      'the seven messages terminal',
      async () => {
        const lines = (await outcome()).stdout.trim().split('\n');
        return lines.length === 7 && lines.every((l) => /^(SUCCEEDED|SKIPPED|DEAD)/.test(l)) && lines;
      },
      120_000,
    );
  }

  /**
   * Ctrl-C to `npm start`, as the user ends it; resolves once every process of it has ended. The
   * patterns are written `[s]cripts…` so that they do not match the shell that runs pgrep, whose
   * own command line holds them.
   */
  async stopStart(): Promise<void> {
    await this.sh('kill -INT $(pgrep -f "[s]cripts/start[.]ts") || true', 60_000);
    await waitFor('npm start ended', async () => (await this.sh('pgrep -f "[w]orkers/|[s]cripts/start[.]ts" >/dev/null || echo ended', 20_000)).stdout.trim() === 'ended', 60_000);
  }

  async down(): Promise<void> {
    await run('docker', ['rm', '-f', this.name], { timeoutMs: 120_000 });
    rmSync(this.work, { recursive: true, force: true });
    console.log(`[${this.name}] seconds per step: ${JSON.stringify(this.times)}`);
  }
}

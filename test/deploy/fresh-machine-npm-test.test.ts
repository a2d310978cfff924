// `npm run test:fresh-machine-npm-test` (not in CI: it takes the machine for 10 minutes or more;
// its result and time are in BENCHMARKS.md): on the fresh Debian 12 of fresh-machine.test.ts, a new
// user's first hour: `npm install && npm start`, README's sample, Ctrl-C, then `npm test`, which
// must pass there as it passes on the developers' machines.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerMissing, ok, ROOT } from './docker.ts';
import { FreshMachine } from './fresh-machine.ts';

const m = new FreshMachine('msgx-fresh-machine-npm-test');
const missing = dockerMissing();
it('the Docker engine answers (.ci/run installs docker.io and starts dockerd)', () => expect(missing).toBeUndefined());
describe.skipIf(missing !== undefined)('npm test on a fresh Debian 12, after npm start and the sample', () => {
  beforeAll(async () => {
    await m.up();
    await m.installAndStart();
    await m.sample();
    await m.stopStart();
  }, 90 * 60_000);
  afterAll(() => m.down(), 180_000);

  it(
    'passes, every file',
    async () => {
      const r = await m.timed('npm test', () => m.sh('npm test > /root/test.log 2>&1; echo "exit $?"; tail -n 40 /root/test.log', 90 * 60_000));
      console.log(`[fresh-machine] npm test in ${m.times['npm test']} s:\n${r.stdout}`);
      await ok('docker', ['cp', `${m.name}:/root/test.log`, join(ROOT, '.local/fresh-machine-npm-test.log')]);
      expect(r.stdout).toMatch(/All three runs: \d+ passed, 0 failed/);
      expect(r.stdout).toMatch(/^exit 0$/m);
    },
    95 * 60_000,
  );
});

import { defineConfig } from 'vitest/config';

// `npm run test:deploy` and `npm run test:fresh-machine` (test/deploy/): the deployments users run,
// in containers of their own; not part of `npm test` (vitest.config.ts leaves test/deploy/ out).
// One file at a time, steps in order, no global setup (they use no service of this machine).
export default defineConfig({
  test: { include: ['test/deploy/**/*.test.ts'], fileParallelism: false, testTimeout: 600_000, hookTimeout: 2_700_000, reporters: ['default'] },
});

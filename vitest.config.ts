import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import { slotCount } from './test/support/slots.ts';

// Test files run side by side, one per worker, each worker with a Postgres database, MariaDB
// schema and Redis db of its own (test/support/slots.ts; created by global-setup.ts); each file
// resets what it uses. The files of ALONE run one at a time (ALONE_WORKERS): each measures a timing
// of seconds (an outage, a take-over, a failover, a stop) that other ALONE files' load blurs, or
// starts every process of an installation at once (Postgres connections). `npm test`
// (scripts/test.ts) runs them in a vitest of their own on the last slot, beside the side-by-side
// files, whose processes it makes nice so that ALONE's get the CPU first; a plain `vitest run`
// runs them after the side-by-side files. Two ALONE files at a time failed 9 tests in 4 files in
// a CI run on a machine about 30 % slower (docs/history/benchmarks.md), so it is one.
export const ALONE = [
  'test/integration/dispatch-failure.test.ts',
  'test/integration/frozen-connections.test.ts',
  'test/integration/leader-takeover.test.ts',
  'test/integration/outages.test.ts',
  'test/integration/pg-failover.test.ts',
  'test/integration/process-metrics.test.ts',
  'test/integration/redis-failover.test.ts',
  'test/integration/runner.test.ts',
];

/**
 * Files with no bound of seconds that `npm test` runs in ALONE's lane, one at a time like them: the
 * lane waits more than it computes, so they balance the two vitest runs; the shadow test's two
 * installations (its connections) then never meet an ALONE installation. Not restore.test.ts: the
 * inbox it leaves marked processed held the runner test's installation after it on the lane's slot
 * as "Postgres is behind" (docs/history/benchmarks.md).
 */
export const LANE = ['test/integration/shadow.test.ts', 'test/integration/tracing.test.ts'];

/**
 * Run last, one at a time, with the machine to themselves: their bounds are fractions of a second
 * (a snapshot decoded within a 150 ms budget, /healthz under 100 ms while a big body is checked, a
 * probe's deadline), which an ALONE neighbour's load broke (the budget's good snapshot ended DEAD
 * once, two at a time); apart from ALONE, as a group of their own, so that ALONE can be widened again.
 */
export const SOLO = ['test/integration/api-security.test.ts', 'test/integration/pipeline/budget.test.ts', 'test/integration/probe.test.ts'];

/**
 * Run by `npm run reliability:r10-kafka`, not by `npm test`: three brokers of its own on two cores
 * time out reading every record back in about one run of two (RELIABILITY.md R10).
 */
const DRILLS = ['test/integration/kafka-cluster.test.ts'];
/** The deployments users run, in containers: `npm run test:deploy`, `npm run test:fresh-machine` (vitest.deploy.config.ts). */
const DEPLOY = ['test/deploy/**'];
const drills = process.env.MSGX_DRILLS === '1';

// Every process a test starts (the workers, the CLIs; hundreds per run) compiles its TypeScript once
// into Node's compile cache and loads it from there afterwards, as the processes of `npm start` do
// (scripts/start.ts): about half the CPU of a start, on a suite that keeps both cores busy.
process.env.NODE_COMPILE_CACHE ??= resolve('.local/compile-cache');

/** Files of ALONE at a time (each in a slot of its own; one when the run has one slot). */
const ALONE_WORKERS = 1;

const common = { testTimeout: 60_000, hookTimeout: 120_000 };

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      {
        test: {
          ...common,
          name: 'side-by-side',
          include: drills ? [] : ['test/**/*.test.ts'],
          exclude: [...ALONE, ...LANE, ...SOLO, ...DRILLS, ...DEPLOY],
          maxWorkers: slotCount(),
          sequence: { groupOrder: 0 },
        },
      },
      { test: { ...common, name: 'alone', include: drills ? DRILLS : [...ALONE, ...LANE], maxWorkers: Math.min(ALONE_WORKERS, slotCount()), sequence: { groupOrder: 1 } } },
      { test: { ...common, name: 'solo', include: drills ? [] : SOLO, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});

// Order of the test files: vitest's own sequencer runs the longest first only when its cache
// (node_modules/.vite) holds durations of a full run — a fresh clone, or a cache last written by a
// run of one file, starts them by file size, and a 3-minute file started last kept one worker busy
// alone for minutes at the end. SLOW lists the longest files (measured, longest first); they start
// first, the rest follow in vitest's order, so the short files fill the workers at the end.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const SLOW = [
  'test/integration/topic-heal.test.ts',
  'test/integration/shadow.test.ts',
  'test/integration/tls-kafka.test.ts',
  'test/integration/operator-cli.test.ts',
  'test/integration/outages.test.ts',
  'test/integration/tls-mariadb.test.ts',
  'test/integration/tls-postgres.test.ts',
  'test/integration/tls-redis.test.ts',
  'test/integration/restore.test.ts',
  'test/integration/frozen-connections.test.ts',
  'test/integration/mirror-heal.test.ts',
  'test/integration/retention.test.ts',
  'test/integration/runner.test.ts',
  'test/integration/secret-leak.test.ts',
  'test/integration/pipeline/crash-points.test.ts',
  'test/integration/job-queue.test.ts',
  'test/integration/state-topic.test.ts',
  'test/integration/pipeline/processes.test.ts',
  'test/integration/runbook.test.ts',
  'test/integration/example-consumer.test.ts',
  'test/integration/e2e-consumer.test.ts',
  'test/integration/dispatch-failure.test.ts',
  'test/integration/ops-console.test.ts',
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW.indexOf(relative(f.project.config.root, f.moduleId).replaceAll('\\', '/'));
      return i === -1 ? SLOW.length : i;
    };
    // Array.prototype.sort is stable: within a rank (the files not listed) vitest's order stays.
    return base
      .map((f, i) => ({ f, i }))
      .sort((a, b) => a.f.project.config.sequence.groupOrder - b.f.project.config.sequence.groupOrder || rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

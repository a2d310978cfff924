// The order in which vitest starts the files of a phase: the longest first, so that the phase does
// not end with one long file running alone while the other workers wait. Vitest does this by itself
// from its results cache (node_modules/.vite/vitest/), which a fresh clone — CI's — does not have:
// it then starts the largest files first, and the side-by-side phase took ~47 s longer (AMD EPYC,
// docs/history/benchmarks.md). Without a cached duration, a file's recorded one below is used.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each of the longest side-by-side files took in a run (its tests, not its hooks; from a
 * JSON report: `npx vitest run --reporter=json --outputFile=…`). Only their order matters: a file
 * that got quicker or slower costs at most some waiting at a phase's end, never a result.
 */
export const RECORDED_SECONDS: Readonly<Record<string, number>> = {
  'test/integration/shadow.test.ts': 100,
  'test/integration/topic-heal.test.ts': 72,
  'test/integration/restore.test.ts': 59,
  'test/integration/tls-kafka.test.ts': 56,
  'test/integration/operator-cli.test.ts': 48,
  'test/integration/mirror-heal.test.ts': 44,
  'test/integration/job-queue.test.ts': 38,
  'test/integration/tls-postgres.test.ts': 38,
  'test/integration/state-topic.test.ts': 32,
  'test/integration/pipeline/processes.test.ts': 30,
  'test/integration/pipeline/crash-points.test.ts': 30,
  'test/integration/example-consumer.test.ts': 26,
  'test/integration/tls-redis.test.ts': 25,
  'test/integration/tls-mariadb.test.ts': 25,
  'test/integration/ops-console.test.ts': 23,
  'test/integration/secret-leak.test.ts': 23,
  'test/integration/runbook.test.ts': 21,
  'test/integration/retention.test.ts': 21,
  'test/integration/start-refusal.test.ts': 13,
  'test/integration/flight-processes.test.ts': 13,
  'test/integration/e2e-consumer.test.ts': 10,
  'test/integration/dispatch-state.test.ts': 8,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const cache = this.ctx.cache;
    const path = (f: TestSpecification) => relative(root, f.moduleId);
    /** Milliseconds: vitest's cached duration, else the recorded one, else unknown (-1). */
    const expected = (f: TestSpecification) => cache.getFileTestResults(`${f.project.name}:${path(f)}`)?.duration ?? (RECORDED_SECONDS[path(f)] ?? -0.001) * 1000;
    const size = (f: TestSpecification) => cache.getFileStats(`${f.project.name}:${path(f)}`)?.size ?? 0;
    return [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        (a.project.name === b.project.name ? 0 : a.project.name < b.project.name ? -1 : 1) ||
        expected(b) - expected(a) ||
        size(b) - size(a),
    );
  }
}

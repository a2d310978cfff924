// Prints one plain closing line that any CI reader understands, after vitest's own summary:
//   "Tests: 455 passed, 0 failed, 0 skipped"
// and, when TEST_SUMMARY_FILE names a file (scripts/test.ts), writes the three counts there as JSON.
import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of modules)
      for (const t of m.children.allTests()) {
        const s = t.result().state;
        if (s === 'passed') passed++;
        else if (s === 'failed') failed++;
        else skipped++;
      }
    for (const m of modules) if (m.state() === 'failed' && [...m.children.allTests()].length === 0) failed++; // a file that failed to load
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
    if (process.env.TEST_SUMMARY_FILE) writeFileSync(process.env.TEST_SUMMARY_FILE, JSON.stringify({ passed, failed, skipped }));
  }
}

import { defineConfig } from 'vitest/config';

// Integration tests share one Postgres database, one MariaDB schema, one Redis and one Kafka:
// files run one at a time; each file resets what it uses (test/support/services.ts).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});

import { defineConfig } from 'vitest/config';

// Suites that start several worker processes (and their own Redis servers) run last and one at a
// time: beside other files they would compete for 2 cores and 100 PostgreSQL connections, and their
// timing-sensitive chaos would measure the neighbours instead of the product.
const MULTI_PROCESS = ['test/faults/**/*.test.ts', 'test/cluster/scale-out.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Integration tests isolate themselves (own database, own queue prefix), so files may run side by side.
    maxWorkers: 2,
    env: { LOG_LEVEL: 'silent', NODE_ENV: 'test' },
    projects: [
      {
        extends: true,
        test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: ['node_modules/**', ...MULTI_PROCESS] },
      },
      {
        extends: true,
        test: { name: 'multi-process', include: MULTI_PROCESS, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});

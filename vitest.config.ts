import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/setup/longest-first.ts';

// Two commands (docs/testing.md):
//   npm test           the inner loop: the projects `unit` and `integration`, in one process each
//                      file, against the real PostgreSQL, Redis and sandbox; about two minutes.
//   npm run test:all   everything: those two, `system` and `multi-process`, with the sampling
//                      tests at full depth (TEST_DEPTH=full). What CI runs.

/**
 * Integration tests that run whole scenarios for tens of seconds (a workload at a rate limit,
 * read lag several times over, a crash and its takeover, every CLI command end to end), or start
 * other programs (Chromium, npm, Redis servers of their own). They run in the full suite only;
 * every module they cover is exercised by a shorter test in the inner loop too.
 */
const SYSTEM = [
  'test/browser/**/*.test.ts',
  'test/package/**/*.test.ts',
  'test/cluster/**/*.test.ts',
  'test/integration/accounts.test.ts',
  'test/integration/live-service.test.ts',
  'test/integration/reconcile-refused.test.ts',
  'test/integration/tracing.test.ts',
  'test/integration/cli-batches.test.ts',
  'test/integration/deliveries-cli.test.ts',
  'test/integration/settle-evidence.test.ts',
  'test/integration/demo.test.ts',
  'test/integration/key-refused.test.ts',
  'test/integration/webhooks.test.ts',
  'test/integration/http-shutdown.test.ts',
  'test/integration/recovery.test.ts',
  'test/integration/batch-model.*.property.test.ts',
];

// Suites that start several worker processes (and their own Redis servers) run last and one at a
// time: beside other files they would compete for the cores and 100 PostgreSQL connections, and their
// chaos would measure the neighbours instead of the product.
const MULTI_PROCESS = ['test/faults/**/*.test.ts', 'test/cluster/scale-out.test.ts'];

// Most integration tests wait on I/O (the sandbox's latency, a lease, a rate limit), not on a core:
// two files per core keep the cores busy without starving the multi-process suites, which run alone.
const WORKERS = Math.max(2, availableParallelism() * 2);

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: WORKERS,
    globalSetup: ['test/setup/global.ts'],
    sequence: { sequencer: LongestFirst },
    env: { LOG_LEVEL: 'silent', NODE_ENV: 'test' },
    // `npm run test:coverage`: which lines of src/ the inner loop runs, by module (scripts/coverage-by-module.ts).
    coverage: { provider: 'v8', include: ['src/**/*.ts'], reporter: ['text-summary', 'json-summary'] },
    projects: [
      // The inner loop's files share each worker's loaded modules (isolate: false): importing src/
      // and its dependencies afresh for every file cost more than the tests themselves. Each file
      // still has its own database, queue prefix and sandbox, and no module keeps state between them.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], exclude: SYSTEM, isolate: false } },
      { extends: true, test: { name: 'system', include: SYSTEM, exclude: MULTI_PROCESS } },
      { extends: true, test: { name: 'multi-process', include: MULTI_PROCESS, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});

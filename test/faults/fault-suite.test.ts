// `npm test` runs N=200; `npm run test:faults` runs the full suite (N=1000). Both print a report
// and write test-results/fault-report.json. FAULT_SUITE_SEED reproduces a run's fault stream.
import { expect, it } from 'vitest';
import { printReport, runChaos } from './chaos.ts';

const n = Number(process.env.FAULT_SUITE_N ?? 200);
const seed = Number(process.env.FAULT_SUITE_SEED ?? 20261122);
const kills = Number(process.env.FAULT_SUITE_KILLS ?? 10);

it(`exactly one class per batch for ${n} batches under faults, kills, a Redis wipe and a Postgres cut (seed ${seed})`, async () => {
  const report = await runChaos({ n, workers: 3, kills, seed, faultRate: 0.15, timeoutMs: 180_000 });
  printReport(report);
  expect(report.duplicates).toBe(0);
  expect(report.crashes).toEqual({ count: 0, samples: [] });
  expect(report.lost).toBe(0);
  expect(report.failed).toBe(0);
  expect(report.synced + report.needsReview.length).toBe(n);
  expect(report.joinLinksMatching).toBe(report.synced);
  for (const row of report.needsReview) expect(row.reason).not.toBe('');
  expect(report.kills.single + report.kills.processesKilled).toBeGreaterThanOrEqual(kills);
  expect(report.redisRestarts).toBe(1);
  expect(report.postgresConnectionsCut).toBeGreaterThan(0);
  // The sandbox holds one class per synced batch plus any needs_review evidence, nothing more.
  expect(report.remoteClasses).toBeLessThanOrEqual(n + report.needsReview.length);
}, 900_000);

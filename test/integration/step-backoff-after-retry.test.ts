// Backoff belongs to the step, counted in the job's data (stepFailures). An
// operator's `retry` puts the batch's failed job back with its attempts reset (BullMQ's
// resetAttemptsMade), but the job's data still holds the count of the failures that wrote the batch
// off: the first failure after the retry then counts as the (attempts)th in a row, and waits up to
// SYNC_BACKOFF_MAX instead of SYNC_BACKOFF_BASE. Asserts the stored counts, not times.
import { expect, it } from 'vitest';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import type { StepFailures } from '../../src/sync/queue.ts';
import { retryBatches } from '../../src/sync/retry-batches.ts';
import { rowOf, untilSynced, untilTerminal } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { addClassCalls, keyOf } from '../helpers/runs.ts';
import { useHarness } from '../helpers/use-harness.ts';

const BASE_MS = 20;
const { h, syncWorker } = useHarness({ env: { SYNC_ATTEMPTS: '4', SYNC_BACKOFF_BASE: `${BASE_MS}ms`, SYNC_BACKOFF_MAX: '10s' } });

it("after an operator's retry, the step's first failure is counted as the first, not as one more after those that wrote the batch off", async () => {
  // An add-class in doubt (attempt 1), then the listing refused on attempts 2 to 4: needs_review.
  h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
  h.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'bodyRejected', count: 3 });
  const failures: Array<{ attemptsMade: number; stepFailures: StepFailures | undefined; delay: number }> = [];
  const worker = syncWorker(h.runtime);
  worker.worker.on('failed', (job) => {
    if (job) failures.push({ attemptsMade: job.attemptsMade, stepFailures: job.data.stepFailures, delay: job.delay });
  });
  await publishBatchCreated(publishDepsOf(h), { batchId: 'retry-backoff', name: 'Retry backoff', subject: 'Logic' });
  expect(await untilTerminal(h, 'retry-backoff')).toMatchObject({ state: 'needs_review', classId: null });
  // The row is written inside the last attempt; BullMQ tells of that attempt's failure a moment later.
  await waitFor(() => failures.length >= 4 || undefined, "the last attempt's failure");
  const before = failures.length;
  // The add-class in doubt (outcome_unknown), then the refused listings counted in a row (the last attempt's is not counted).
  expect(failures.map((f) => f.stepFailures && `${f.stepFailures.kind} ${f.stepFailures.n}`)).toEqual([
    'outcome_unknown 1',
    'listing_refused 1',
    'listing_refused 2',
    'listing_refused 2',
  ]);

  // The operator retries; the listing is refused once more, then answers.
  h.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'bodyRejected', count: 1 });
  const [retried] = await retryBatches({ db: h.runtime.database.db, queue: h.runtime.queue }, { keys: [keyOf(h, 'retry-backoff')] });
  expect(retried).toMatchObject({ from: 'needs_review', to: 'creating', queued: true });
  await untilSynced(h, 'retry-backoff');

  const after = failures.slice(before);
  expect(
    after.map((f) => f.attemptsMade),
    'BullMQ counted the failure after the retry as the first',
  ).toEqual([1]);
  // The first failure of its step since the operator's retry: counted 1, its wait at most the base.
  expect(after.map((f) => f.stepFailures)).toEqual([{ step: 'creating', kind: 'listing_refused', n: 1 }]);
  expect(after[0]?.delay).toBeLessThanOrEqual(BASE_MS);
  expect(addClassCalls(h)).toBe(1);
  expect((await rowOf(h, 'retry-backoff'))?.state).toBe('synced');
});

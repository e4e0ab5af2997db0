// Backoff belongs to the step, through a real worker against the sandbox: a batch whose link-enable
// failed five times in a row (503s) then meets one 503 on its read: that failure is the first of its
// step, stored so in the job's data, and waits at most SYNC_BACKOFF_BASE, however many failures came
// before it. BullMQ's attempts still count every failure. Asserts what is stored and the order of
// the calls, not how long anything took.
import { expect, it } from 'vitest';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import type { StepFailures } from '../../src/sync/queue.ts';
import { untilSynced } from '../helpers/batches.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { keyOf } from '../helpers/runs.ts';
import { useHarness } from '../helpers/use-harness.ts';

const BASE_MS = 20;
// SYNC_BACKOFF_MAX well above base · 2^5: a wait counted over the job's whole life would show.
const { h, syncWorker } = useHarness({ env: { SYNC_ATTEMPTS: '10', SYNC_BACKOFF_BASE: `${BASE_MS}ms`, SYNC_BACKOFF_MAX: '10s' } });

it("a first 503 on get-class after five failed edit-class waits at most the base, counted as the step's first", async () => {
  h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'error5xx', count: 5 });
  h.sandbox.faults.enqueue({ operation: 'getClass', fault: 'error5xx', count: 1 });
  await publishBatchCreated(publishDepsOf(h), { batchId: 'late-503', name: 'Late 503', subject: 'Maths' });
  const failures: Array<{ attemptsMade: number; stepFailures: StepFailures | undefined; delay: number }> = [];
  const worker = syncWorker(h.runtime);
  // As BullMQ moved the job to retry: what it counted, what the backoff read, the wait it was given.
  worker.worker.on('failed', (job) => {
    if (job) failures.push({ attemptsMade: job.attemptsMade, stepFailures: job.data.stepFailures, delay: job.delay });
  });
  await untilSynced(h, 'late-503');

  expect(failures.map((f) => f.stepFailures)).toEqual([
    { step: 'created', kind: 'outcome_unknown', n: 1 },
    { step: 'created', kind: 'outcome_unknown', n: 2 },
    { step: 'created', kind: 'outcome_unknown', n: 3 },
    { step: 'created', kind: 'outcome_unknown', n: 4 },
    { step: 'created', kind: 'outcome_unknown', n: 5 },
    { step: 'link_enabled', kind: 'outcome_unknown', n: 1 },
  ]);
  expect(failures.map((f) => f.attemptsMade)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(failures.at(-1)?.delay).toBeLessThanOrEqual(BASE_MS);
  // What the job keeps in Redis: the newest failure's step and count.
  const job = await h.runtime.queue.getJob(jobIdFor(keyOf(h, 'late-503')));
  expect(job?.data.stepFailures).toEqual({ step: 'link_enabled', kind: 'outcome_unknown', n: 1 });
  const calls = h.sandbox.state({ classes: false }).calls.byOperation;
  expect({ add: calls.addClass?.calls, edit: calls.editClass?.calls, get: calls.getClass?.calls }).toEqual({ add: 1, edit: 6, get: 2 });
});

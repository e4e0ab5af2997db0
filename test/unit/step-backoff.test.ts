// Backoff belongs to the step: a failed job's wait grows with the failures in a row of the step its
// batch is stuck on (stored in the job's data by countStepFailure), not with every failure of the
// job's life (BullMQ's attemptsMade). Driven by a fixed random draw: the waits asserted are the
// ceilings, never times.
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../src/classroom/errors.ts';
import { createLogger } from '../../src/logging/logger.ts';
import type { BatchState } from '../../src/mapping/index.ts';
import { countStepFailure, stepBackoff } from '../../src/sync/backoff.ts';
import { RunStoppedError, SyncError } from '../../src/sync/errors.ts';
import type { SyncJobData } from '../../src/sync/queue.ts';

const settings = { baseMs: 1_000, maxMs: 300_000 };
/** The largest draw: a wait of the ceiling less a millisecond. */
const top = () => 0.999_999;

/** A job as settle and the backoff strategy see it: its data, BullMQ's count of failures, its write. */
function jobOf(data: SyncJobData = { instituteId: 'i1', batchId: 'b1' }, write?: (data: SyncJobData) => Promise<void>) {
  const job = {
    data,
    attemptsMade: 0,
    writes: [] as SyncJobData[],
    async updateData(next: SyncJobData) {
      job.data = next;
      await (write ?? (async () => undefined))(next);
      job.writes.push(next);
    },
  };
  return job;
}

/** What a run that held the lease throws when a call failed in `state`. */
function stoppedIn(state: BatchState, retryAfterMs?: number): RunStoppedError {
  const remote = new OutcomeUnknownError('getClass failed with HTTP 503', { operation: 'getClass', httpStatus: 503, retryAfterMs });
  return new RunStoppedError(new SyncError('outcome_unknown', 'http_503', remote.message, { cause: remote }), state);
}

/** One failed attempt as the worker goes through it: settle counts it, then BullMQ asks the strategy (attemptsMade + 1). */
async function fail(job: ReturnType<typeof jobOf>, error: unknown): Promise<number> {
  await countStepFailure(job, error, createLogger({ level: 'silent' }));
  const wait = stepBackoff(job, job.attemptsMade + 1, settings, top);
  job.attemptsMade += 1;
  return wait + 1;
}

describe('stepBackoff', () => {
  it("after 5 failures in 'creating', a first in 'link_enabled' waits at most the base, not base · 2^5", async () => {
    const job = jobOf();
    const ceilings: number[] = [];
    for (let i = 0; i < 5; i++) ceilings.push(await fail(job, stoppedIn('creating')));
    ceilings.push(await fail(job, stoppedIn('link_enabled')));
    expect(ceilings).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 1_000]);
    expect(job.data.stepFailures).toEqual({ step: 'link_enabled', kind: 'outcome_unknown', n: 1 });
    // BullMQ's count, which the attempts limit reads, still counts every failure.
    expect(job.attemptsMade).toBe(6);
    expect(job.writes.map((d) => d.stepFailures && `${d.stepFailures.step} ${d.stepFailures.n}`)).toEqual([
      'creating 1',
      'creating 2',
      'creating 3',
      'creating 4',
      'creating 5',
      'link_enabled 1',
    ]);
  });

  it('counts failures before any run held the lease as a step of their own, of one kind in a row, and keeps the rest of the data', async () => {
    const job = jobOf({ instituteId: 'i1', batchId: 'b1', lane: 'under_way', receivedAt: '2026-11-28T10:00:00Z' });
    await fail(job, new SyncError('not_sent', 'limiter_unavailable', 'no rate-limit slot could be asked for'));
    await fail(job, new SyncError('not_sent', 'limiter_unavailable', 'no rate-limit slot could be asked for'));
    expect(job.data).toEqual({
      instituteId: 'i1',
      batchId: 'b1',
      lane: 'under_way',
      receivedAt: '2026-11-28T10:00:00Z',
      stepFailures: { step: 'before_run', kind: 'not_sent', n: 2 },
    });
    // Another kind in the same step counts from 1: the step's failures in a row are of one kind.
    await fail(job, new Error('a bug before the lease'));
    expect(job.data.stepFailures).toEqual({ step: 'before_run', kind: 'internal', n: 1 });
    await fail(job, stoppedIn('pending'));
    expect(job.data.stepFailures).toEqual({ step: 'pending', kind: 'outcome_unknown', n: 1 });
  });

  it("waits at least the remote's Retry-After when it is longer, at most SYNC_BACKOFF_MAX", async () => {
    const job = jobOf();
    expect(await fail(job, stoppedIn('link_enabled', 20_000))).toBe(20_001);
    expect(job.data.stepFailures).toEqual({ step: 'link_enabled', kind: 'outcome_unknown', n: 1, retryAfterMs: 20_000 });
    // Shorter than the draw: the draw stands (the 2nd in a row: up to 2 s).
    expect(await fail(job, stoppedIn('link_enabled', 500))).toBe(2_000);
    // The next failure without one forgets it.
    await fail(job, stoppedIn('link_enabled'));
    expect(job.data.stepFailures).toEqual({ step: 'link_enabled', kind: 'outcome_unknown', n: 3 });
    // An hour's Retry-After waits SYNC_BACKOFF_MAX; so does the 20th failure in a row.
    expect(
      stepBackoff({ data: { ...job.data, stepFailures: { step: 'created', kind: 'outcome_unknown', n: 1, retryAfterMs: 3_600_000 } } }, 1, settings, () => 0),
    ).toBe(300_000);
    expect(stepBackoff({ data: { ...job.data, stepFailures: { step: 'created', kind: 'outcome_unknown', n: 20 } } }, 20, settings, top) + 1).toBe(300_000);
  });

  it('a job with no count stored waits by its attempts, as before', () => {
    expect(stepBackoff({ data: { instituteId: 'i1', batchId: 'b1' } }, 4, settings, top) + 1).toBe(8_000);
    expect(stepBackoff(undefined, 2, settings, top) + 1).toBe(2_000);
  });

  it('a count that cannot be stored loses nothing: a warning, and this wait falls back to the attempts', async () => {
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void warnings.push(JSON.parse(line).msg) } });
    const job = jobOf(undefined, async () => {
      throw new Error('Connection is closed.');
    });
    job.attemptsMade = 4;
    await expect(countStepFailure(job, stoppedIn('created'), logger)).resolves.toBeUndefined();
    expect(warnings).toEqual(['could not store the failures of the step in the job; its backoff counts every failure of the job instead']);
    expect(job.data.stepFailures).toEqual({ step: 'created', kind: 'outcome_unknown', n: 5 });
    expect(stepBackoff(job, job.attemptsMade + 1, settings, top) + 1).toBe(16_000);
  });
});

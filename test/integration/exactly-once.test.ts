// Exactly one class per batch when add-class answers ambiguously, and needs_review when reading
// cannot tell. Each case injects a fault into the sandbox and checks the sandbox's ground truth.
import { eq } from 'drizzle-orm';
import { beforeEach, describe, expect, it } from 'vitest';
import { batchClasses } from '../../src/db/schema/index.ts';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import * as mapping from '../../src/mapping/index.ts';
import { DeferError } from '../../src/sync/errors.ts';
import { runBatch } from '../../src/sync/machine.ts';
import { retryBatches } from '../../src/sync/retry-batches.ts';

import { rowOf, untilSynced, untilTerminal } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';

const { h, worker } = useHarnessWithWorker();
let n = 0;

beforeEach(() => h.sandbox.faults.clear());

async function publishOne(name: string) {
  n += 1;
  const batchId = `eo-${n}`;
  await publishBatchCreated(publishDepsOf(h), { batchId, name, subject: 'Chemistry' });
  return batchId;
}

describe('add-class of unknown outcome', () => {
  it.each(['lostResponse', 'hang', 'error5xxAfterStore', 'nonJsonBody', 'truncatedBody', 'bodyError'] as const)(
    'after %s the class is adopted from the listing, never created twice',
    async (fault) => {
      h.sandbox.faults.enqueue({ operation: 'addClass', fault });
      const name = `Adopt after ${fault}`;
      const row = await untilTerminal(h, await publishOne(name));
      expect(row.state).toBe('synced');
      expect(h.sandbox.state().byName[name]).toBe(1);
      const remote = h.sandbox.state().classes!.find((c) => c.name === name)!;
      expect(row.classId).toBe(remote.id);
      expect(row.joinLink).toBe(remote.joinMagicLink);
      expect(row.attempts).toBeGreaterThanOrEqual(2);
    },
  );

  it('after a 5xx that stored nothing, reading finds no class and it is created once', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'error5xx' });
    const name = 'Create after plain 5xx';
    const row = await untilTerminal(h, await publishOne(name));
    expect(row.state).toBe('synced');
    expect(h.sandbox.state().byName[name]).toBe(1);
    expect(h.sandbox.state().calls.byOperation.addClass?.calls).toBeGreaterThanOrEqual(2);
  });

  it('a listing that lags less than the settle delay still finds the class', async () => {
    h.sandbox.faults.set({ listingDelayMs: 80 });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    const name = 'Lagging listing';
    const row = await untilTerminal(h, await publishOne(name));
    expect(row.state).toBe('synced');
    expect(h.sandbox.state().byName[name]).toBe(1);
  });

  it('two unmapped same-named classes → needs_review with the evidence, no third create', async () => {
    const name = 'Twin';
    h.sandbox.store.create({ name, subject: 'Chemistry', instituteId: h.config.classroom.instituteId });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    const row = await untilTerminal(h, await publishOne(name));
    expect(row.state).toBe('needs_review');
    expect(row.classId).toBeNull();
    const review = row.review as { reason: string; evidence: { matches: { _id: string }[] } };
    expect(review.reason).toMatch(/2 unmapped remote classes are named "Twin"/);
    expect(review.evidence.matches).toHaveLength(2);
    expect(h.sandbox.state().byName[name]).toBe(2);
  });

  it('a match without an _id → needs_review, never a second create', async () => {
    h.sandbox.faults.set({ listingIncludesIds: false });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    const name = 'No ids in listing';
    const row = await untilTerminal(h, await publishOne(name));
    expect(row.state).toBe('needs_review');
    expect(row.lastError).toMatch(/no _id/);
    expect(h.sandbox.state().byName[name]).toBe(1);
  });

  it('classes mapped to other batches are not adopted: same name, different batch', async () => {
    const first = await untilTerminal(h, await publishOne('Shared name'));
    expect(first.state).toBe('synced');
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'error5xx' });
    const second = await untilTerminal(h, await publishOne('Shared name'));
    expect(second.state).toBe('synced');
    expect(second.classId).not.toBe(first.classId);
    expect(h.sandbox.state().byName['Shared name']).toBe(2);
  });
});

describe('failures that are not ambiguous', () => {
  it('a rejected add-class fails at once with the reason and no retries; retry resumes it safely', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
    const batchId = await publishOne('Rejected once');
    const row = await untilTerminal(h, batchId);
    expect(row).toMatchObject({ state: 'failed', attempts: 1, lastErrorKind: 'rejected', createSentAt: null });
    expect(row.lastError).toMatch(/addClass answered HTTP 200 with body status 400/);

    const [result] = await retryBatches({ db: h.runtime.database.db, queue: h.runtime.queue }, { keys: [{ instituteId: row.instituteId, batchId }] });
    expect(result).toMatchObject({ from: 'failed', to: 'pending', queued: true });
    await untilSynced(h, batchId);
    expect(h.sandbox.state().byName['Rejected once']).toBe(1);
  });

  it('throttling does not burn attempts', async () => {
    h.sandbox.faults.set({ retryAfterSeconds: 0 });
    h.sandbox.faults.enqueue({ operation: '*', fault: 'throttle', count: 4 });
    const row = await untilTerminal(h, await publishOne('Throttled'));
    expect(row.state).toBe('synced');
    expect(row.attempts).toBe(1);
    expect(h.sandbox.state().byName.Throttled).toBe(1);
  });

  it('a retry of a failed batch whose create may have happened resolves by reading, not posting', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    const batchId = await publishOne('Exhausted then retried');
    // Fail it by hand at the worst moment: create sent, outcome unknown.
    await waitFor(async () => (await rowOf(h, batchId))?.createSentAt, 'create sent');
    await worker.worker.pause(true);
    await h.runtime.database.db.update(batchClasses).set({ state: 'failed', leaseExpiresAt: null }).where(eq(batchClasses.batchId, batchId));
    const [result] = await retryBatches(
      { db: h.runtime.database.db, queue: h.runtime.queue },
      { keys: [{ instituteId: h.config.classroom.instituteId, batchId }] },
    );
    worker.worker.resume();
    expect(result?.to).toBe('creating');
    await untilSynced(h, batchId);
    expect(h.sandbox.state().byName['Exhausted then retried']).toBe(1);
  });
});

describe('one runner per batch', () => {
  // A runner paused after its add-class reached the remote comes back, finds its lease taken and
  // stores the ClassID anyway. The run that holds the batch now decided without that class: its
  // next write must not overwrite the state (found by the state-machine property test, where such
  // a write left needs_review beside a stored ClassID, and could as well have sent add-class again).
  it.each(['after', 'before'] as const)('a class stored by a runner that lost its lease fences out the current run (its write lands %s)', async (order) => {
    // Recorded without a job: this test plays every runner itself.
    const name = `Claimed ${order}`;
    const key = { instituteId: h.config.classroom.instituteId, batchId: `claimed-${order}` };
    const db = h.runtime.database.db;
    await mapping.recordReceived(db, [{ event: { ...key, name, subject: 'Chemistry', extra: {} }, className: name }]);
    const acquired = await mapping.acquireLease(db, key, 'runner-now', 30_000, 1, 10_000);
    if (acquired.status !== 'acquired') throw new Error(`lease not granted: ${acquired.status}`);
    const { lease } = acquired;
    await mapping.markCreating(db, lease, 30_000, { revision: 0, event: acquired.row.event, version: null, className: name }, []);
    // The class the paused runner's add-class made.
    const { classId } = await h.runtime.remotes.default.classroom.addClass({ name, subject: 'Chemistry', instituteId: key.instituteId, extra: {} });
    const review = { reason: 'the listing could not tell', evidence: { className: name, matches: [], mappedElsewhere: [] } };
    if (order === 'before') await mapping.markNeedsReview(db, lease, review, []);
    expect(await mapping.claimCreatedClass(db, lease.rowId, classId, 'runner-paused')).toBe(true);
    if (order === 'after') {
      await expect(mapping.markNeedsReview(db, lease, review, [])).rejects.toBeInstanceOf(mapping.LeaseLostError);
      await expect(mapping.forgetCreate(db, lease, 30_000, [])).rejects.toBeInstanceOf(mapping.LeaseLostError);
    }
    const row = (await mapping.findBatch(db, key))!;
    expect([row.state, row.classId, row.review, row.leaseOwner]).toEqual(['created', classId, null, null]);
    const timeline = (await mapping.readTimeline(db, key))!;
    expect(timeline.some((e) => e.toState === 'created' && e.classId === classId && e.workerId === 'runner-paused')).toBe(true);
    // The next run carries on from the stored class: no second add-class.
    const deps = {
      db,
      classroom: h.runtime.remotes.default.classroom,
      logger: createLogger({ level: 'silent' }),
      settings: h.runtime.syncSettings.run,
      workerId: 'runner-next',
    };
    await runBatch(deps, key, 2);
    const synced = (await mapping.findBatch(db, key))!;
    expect([synced.state, synced.classId]).toEqual(['synced', classId]);
    expect(h.sandbox.state().byName[name]).toBe(1);
  });

  it('two concurrent runs of the same batch send one add-class; the other is deferred', async () => {
    await worker.worker.pause(true);
    try {
      const batchId = await publishOne('Raced');
      h.sandbox.faults.set({ latencyMs: 150 });
      const deps = {
        db: h.runtime.database.db,
        classroom: h.runtime.remotes.default.classroom,
        logger: createLogger({ level: 'silent' }),
        settings: { ...h.runtime.syncSettings.run, leaseMs: 3_000, settleMs: 150, throttlePauseMs: 100 },
      };
      const key = { instituteId: h.config.classroom.instituteId, batchId };
      const results = await Promise.allSettled([runBatch({ ...deps, workerId: 'runner-a' }, key, 1), runBatch({ ...deps, workerId: 'runner-b' }, key, 1)]);
      const fulfilled = results.filter((r) => r.status === 'fulfilled');
      const deferred = results.filter((r) => r.status === 'rejected' && r.reason instanceof DeferError);
      expect(fulfilled).toHaveLength(1);
      expect(deferred).toHaveLength(1);
      expect(h.sandbox.state().byName.Raced).toBe(1);
      expect((await rowOf(h, batchId))?.state).toBe('synced');
    } finally {
      worker.worker.resume();
    }
  });
});

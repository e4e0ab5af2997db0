// An add-class of unknown outcome whose class the listing does not show is settled from evidence
// that the listing would show it (measured read lag, a witness), in seconds rather than after
// 10 × SYNC_READ_LAG; and a listing that lags more than get-class does is never taken for fresh.
// SYNC_READ_LAG is set so that the patience (10 × it) lies far beyond each test's timeout: a batch
// that settles here was settled by evidence.
import { and, eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { batchClasses, batchEvents } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import { rowOf, untilAllSynced } from '../helpers/batches.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';

/** The history's "not listed, so create again" decisions, with the evidence that settled each. */
async function createDecisions(h: Harness): Promise<{ batchId: string; settledBy: Record<string, unknown> }[]> {
  const rows = await h.runtime.database.db
    .select({ batchId: batchClasses.batchId, detail: batchEvents.detail })
    .from(batchEvents)
    .innerJoin(batchClasses, eq(batchClasses.id, batchEvents.batchRowId))
    .where(and(eq(batchEvents.type, 'transition'), sql`${batchEvents.detail}->>'resolution' = 'create'`));
  return rows.map((r) => ({ batchId: r.batchId, settledBy: (r.detail as { settledBy: Record<string, unknown> }).settledBy }));
}

/**
 * Class names of one length, so that none is a prefix of another: after a lost answer, a listed
 * "class 1" could be a cut of "class 13", and the batch would rightly go to needs_review.
 */
const nameOf = (prefix: string, i: number) => `${prefix} class ${String(i).padStart(2, '0')}`;

async function publish(h: Harness, prefix: string, count: number): Promise<string[]> {
  const events = Array.from({ length: count }, (_, i) => ({ batchId: `${prefix}-${i}`, name: nameOf(prefix, i), subject: 'Physics' }));
  await publishBatches(publishDepsOf(h), events);
  return events.map((e) => e.batchId);
}

/** One class per batch on the remote, under the name each was published with. */
function expectOneClassEach(h: Harness, prefix: string, count: number): void {
  const byName = h.sandbox.state().byName;
  for (let i = 0; i < count; i++) expect(byName[nameOf(prefix, i)], nameOf(prefix, i)).toBe(1);
}

describe('a remote whose reads do not lag', () => {
  const { h } = useHarnessWithWorker({ env: { SYNC_READ_LAG: '60s', CLASSROOM_TIMEOUT: '1s' } });

  it('settles a 5xx add-class from the measured lag in seconds, once the listing was seen as fresh', { timeout: 120_000 }, async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'error5xx' });
    const ids = await publish(h, 'Measured', 30);
    await untilAllSynced(h, ids, 100_000);
    expectOneClassEach(h, 'Measured', 30);
    const decisions = await createDecisions(h);
    expect(decisions).toHaveLength(1);
    expect(decisions[0]?.settledBy).toMatchObject({ by: 'measured_lag' });
    expect(Number(decisions[0]?.settledBy.samples)).toBeGreaterThanOrEqual(20);
  });
});

describe('a remote with no lag measured yet', () => {
  const { h } = useHarnessWithWorker({ env: { SYNC_READ_LAG: '2s', CLASSROOM_TIMEOUT: '1s' } });

  it('settles a 5xx add-class on a witness: a class sent after it ended (+ CLASSROOM_TIMEOUT + SYNC_READ_LAG) is listed', { timeout: 120_000 }, async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'error5xx' });
    const [first] = await publish(h, 'Witnessed', 1);
    const { db } = h.runtime.database;
    // The witness must be sent once the first add-class has ended, plus the timeout and the read lag.
    const ended = await waitFor(async () => (await rowOf(h, first!))?.createEndedAt ?? undefined, 'the first add-class to end');
    await waitFor(async () => {
      const [{ past }] = (await db.execute(sql`select now() > ${ended.toISOString()}::timestamptz + interval '3200 ms' as past`)).rows as [{ past: boolean }];
      return past;
    }, 'the witness margin to pass');
    const [witness] = await publish(h, 'Witness', 1);
    const rows = await untilAllSynced(h, [first!, witness!], 15_000);
    expectOneClassEach(h, 'Witnessed', 1);
    const [decision] = await createDecisions(h);
    expect(decision).toMatchObject({ batchId: first, settledBy: { by: 'witness', witnessClassId: rows.find((r) => r.batchId === witness)?.classId } });
  });
});

describe('a remote whose listing lags more than its get-class', () => {
  const { h } = useHarnessWithWorker({ env: { SYNC_READ_LAG: '60s', CLASSROOM_TIMEOUT: '1s' } });

  it('never takes a listing for fresh on read samples alone: a stored class is adopted once listed, not made again', { timeout: 120_000 }, async () => {
    // get-class knows a class at once; the listing shows it only 4 s later. A burst gives the worker
    // plenty of read samples (all fast); once the listing has caught up with it, nothing is missing
    // from the listing, and only a listing seen as fresh as the reads would license a second add-class.
    // (4 s: well past what fast read samples bound the lag to, plus CLASSROOM_TIMEOUT.)
    h.sandbox.faults.set({ listingDelayMs: 4_000 });
    const ids = await publish(h, 'Slow listing', 30);
    await untilAllSynced(h, ids, 100_000);
    const { classroom } = h.runtime.remotes.default;
    await waitFor(async () => (await classroom.listClasses(h.config.classroom.instituteId, {})).classes.length >= 30, 'the listing to catch up', 40_000);
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'error5xxAfterStore' });
    const [late] = await publish(h, 'Slow listing late', 1);
    const row = await untilAllSynced(h, [late!], 60_000);
    expect(h.sandbox.state().byName[nameOf('Slow listing late', 0)]).toBe(1);
    expect(row[0]?.classId).toBe(h.sandbox.state().classes?.find((c) => c.name === nameOf('Slow listing late', 0))?.id);
    expect(await createDecisions(h)).toEqual([]);
  });
});

describe('a remote that acts on an add-class after the client gave up on it', () => {
  const { h } = useHarnessWithWorker({ env: { SYNC_READ_LAG: '60s', CLASSROOM_TIMEOUT: '2s', SYNC_CONCURRENCY: '4' } });

  it('takes CLASSROOM_TIMEOUT more before believing "not listed": the late class is adopted, not made again', { timeout: 120_000 }, async () => {
    // A first burst measures the lag (small), and its one lost answer has a listing read and seen fresh.
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    await untilAllSynced(h, await publish(h, 'Warm', 30), 100_000);
    // Then the remote holds a request without answering and makes the class 3.6 s after it arrived,
    // 1.6 s after the client's 2 s timeout: within the CLASSROOM_TIMEOUT a settle allows for it, and
    // later than the measured lag alone would wait.
    h.sandbox.faults.set({ lateEffectMs: 3_600 });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lateEffect' });
    await untilAllSynced(h, await publish(h, 'Late', 1), 60_000);
    expectOneClassEach(h, 'Warm', 30);
    expectOneClassEach(h, 'Late', 1);
    expect(await createDecisions(h)).toEqual([]);
    expect(h.sandbox.state().calls.faultsInjected).toMatchObject({ lateEffect: 1 });
  });
});

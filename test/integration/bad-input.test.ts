// Bad input never hurts good data: an unknown institute, oversized fields, hostile ids and unreadable
// bodies from the remote each end in a clear error (or a safe resolution) on the one batch they
// touch, while the batches beside them sync and the worker keeps going.
import { eq } from 'drizzle-orm';
import { beforeEach, describe, expect, it } from 'vitest';
import { readTimeline } from '../../src/mapping/index.ts';
import { type BatchRow, batchClasses } from '../../src/db/schema/index.ts';
import { publishBatches } from '../../src/intake/publish.ts';
import type { FaultKind, SandboxOperation } from '../../src/sandbox/index.ts';
import { rowOf, rowsOf, untilAllTerminal } from '../helpers/batches.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';

const { h, worker } = useHarnessWithWorker();
let n = 0;

beforeEach(() => h.sandbox.faults.clear());

const institute = () => h.config.classroom.instituteId;
const good = (label: string) => {
  n += 1;
  return { batchId: `bad-input-${n}`, name: `${label} ${n}`, subject: 'Civics' };
};
/** Faults the sandbox injected since `before` (its counters run for the whole file). */
const injectedSince = (before: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(h.sandbox.state({ classes: false }).calls.faultsInjected)
      .map(([fault, count]) => [fault, count - (before[fault] ?? 0)] as const)
      .filter(([, count]) => count > 0),
  );
const injectedNow = () => h.sandbox.state({ classes: false }).calls.faultsInjected;
const classesNamed = (name: string) => h.sandbox.state().classes!.filter((c) => c.name === name);

/** Synced, with exactly the one remote class its name points to, stored as the remote has it. */
async function expectSyncedOnce(event: { batchId: string; name: string }): Promise<BatchRow> {
  const row = (await rowOf(h, event.batchId))!;
  expect(row.state, `${event.batchId}: ${row.lastError ?? ''}`).toBe('synced');
  const remote = classesNamed(event.name);
  expect(remote, `classes named ${event.name}`).toHaveLength(1);
  expect(row.classId).toBe(remote[0]!.id);
  expect(row.joinLink).toBe(remote[0]!.joinMagicLink);
  return row;
}

/** The worker is alive: a batch published now still syncs. */
async function workerStillSyncs(): Promise<void> {
  expect(worker.worker.isRunning()).toBe(true);
  const event = good('After the storm');
  await publishBatches(publishDepsOf(h), [event]);
  await untilAllTerminal(h, [event.batchId]);
  await expectSyncedOnce(event);
}

describe('bad input never hurts good data', () => {
  it('an institute the remote does not know fails only its own batch, naming the institute', async () => {
    const before = good('Before unknown');
    const unknown = { ...good('Unknown institute'), instituteId: 'no-such-institute' };
    const after = good('After unknown');
    const outcomes = await publishBatches(publishDepsOf(h), [before, unknown, after]);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    await untilAllTerminal(h, [before.batchId, unknown.batchId, after.batchId]);

    const failed = (await rowOf(h, unknown.batchId))!;
    // A 403 about its institute (the key itself works): its attempts, in case a refusal of the key was
    // just ending, then failed.
    expect(failed).toMatchObject({
      state: 'failed',
      instituteId: 'no-such-institute',
      classId: null,
      lastErrorKind: 'forbidden',
      attempts: h.config.sync.attempts,
    });
    expect(failed.lastError).toContain('no-such-institute');
    expect(failed.lastError).toMatch(/addClass/);
    expect(classesNamed(unknown.name)).toHaveLength(0);
    await expectSyncedOnce(before);
    await expectSyncedOnce(after);
    await workerStillSyncs();
  });

  it('oversized and otherwise invalid fields are refused at intake, naming the field; the rest of the request is recorded and syncs', async () => {
    const a = good('Beside oversized');
    const b = good('Also beside oversized');
    const bad = [
      { ...good('x'), name: 'N'.repeat(201) },
      { ...good('x'), subject: 'S'.repeat(5_000) },
      { ...good('x'), batchId: 'B'.repeat(201) },
      { ...good('x'), instituteId: 'I'.repeat(129) },
      { ...good('x'), instituteId: '..' },
      { ...good('x'), notes: 'n'.repeat(9_000) },
      { ...good('x'), notes: 'nul \u0000 byte' },
      { ...good('x'), name: 'unpaired \ud800 surrogate' },
    ];
    const expectedFields = ['name', 'subject', 'batchId', 'instituteId', 'instituteId', 'notes', 'notes', 'name'];
    const outcomes = await publishBatches(publishDepsOf(h), [a, ...bad, b]);
    expect(outcomes[0]).toMatchObject({ ok: true });
    expect(outcomes.at(-1)).toMatchObject({ ok: true });
    bad.forEach((_, i) => {
      const outcome = outcomes[i + 1]!;
      expect(outcome.ok, `bad event ${i} refused`).toBe(false);
      if (outcome.ok) return;
      expect(outcome.problems.map((p) => p.field)).toEqual([expectedFields[i]]);
      expect(outcome.problems[0]!.reason.length).toBeGreaterThan(0);
    });
    expect(
      await rowsOf(
        h,
        bad.map((e) => e.batchId),
      ),
    ).toHaveLength(0);
    await untilAllTerminal(h, [a.batchId, b.batchId]);
    await expectSyncedOnce(a);
    await expectSyncedOnce(b);
  });

  describe('ids with path characters in remote answers', () => {
    it('add-class answers "../<id>": the id is not used; the class is found by reading and adopted, once', async () => {
      const before = injectedNow();
      h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'unsafeId' });
      const victim = good('Traversal create');
      const bystander = good('Bystander of traversal');
      await publishBatches(publishDepsOf(h), [victim, bystander]);
      await untilAllTerminal(h, [victim.batchId, bystander.batchId]);
      // Whichever of the two took the fault, both end with their one class and a safe id.
      for (const event of [victim, bystander]) {
        const row = await expectSyncedOnce(event);
        expect(row.classId).toMatch(/^[0-9a-f]{24}$/);
      }
      expect(injectedSince(before)).toEqual({ unsafeId: 1 });
      const timelines = await Promise.all(
        [victim, bystander].map((e) => readTimeline(h.runtime.database.db, { instituteId: institute(), batchId: e.batchId })),
      );
      const refused = timelines.flat().filter((e) => e?.type === 'remote_call' && e.operation === 'addClass' && e.outcome === 'outcome_unknown');
      expect(refused).toHaveLength(1);
      expect(refused[0]!.error).toMatch(/unusable class id/);
    });

    it('get-class and edit-class answering with "../<id>" are retried, never trusted', async () => {
      const before = injectedNow();
      h.sandbox.faults.enqueue({ operation: 'getClass', fault: 'unsafeId' });
      h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'unsafeId' });
      const event = good('Traversal read');
      await publishBatches(publishDepsOf(h), [event]);
      await untilAllTerminal(h, [event.batchId]);
      const row = await expectSyncedOnce(event);
      expect(row.classId).toMatch(/^[0-9a-f]{24}$/);
      expect(row.joinLink).not.toContain('..');
      expect(injectedSince(before)).toEqual({ unsafeId: 2 });
    });

    it('a listing whose only match has an unsafe id cannot be adopted: needs_review with the reason, no second create', async () => {
      h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
      h.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'unsafeId' });
      const event = good('Traversal listing');
      await publishBatches(publishDepsOf(h), [event]);
      const [row] = await untilAllTerminal(h, [event.batchId]);
      expect(row!.state).toBe('needs_review');
      expect(row!.classId).toBeNull();
      const review = row!.review as { reason: string; evidence: { matches: { _id: string }[] } };
      expect(review.reason).toMatch(/not a safe identifier/);
      expect(review.evidence.matches.map((m) => m._id)).toEqual([`../${classesNamed(event.name)[0]!.id}`]);
      expect(classesNamed(event.name)).toHaveLength(1);
      await workerStillSyncs();
    });
  });

  describe('unreadable remote bodies', () => {
    const cases: Array<[SandboxOperation, FaultKind]> = (['addClass', 'editClass', 'getClass', 'listClasses'] as const).flatMap((op) =>
      (['nonJsonBody', 'truncatedBody'] as const).map((fault): [SandboxOperation, FaultKind] => [op, fault]),
    );
    it.each(cases)('%s answering %s: a clear error on that batch, then a safe recovery; the batch beside it syncs', async (operation, fault) => {
      const before = injectedNow();
      // The listing is read only to settle an add-class of unknown outcome: make one happen first.
      if (operation === 'listClasses') h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
      h.sandbox.faults.enqueue({ operation, fault });
      const victim = good(`Unreadable ${operation} ${fault}`);
      const bystander = good(`Beside unreadable ${operation}`);
      await publishBatches(publishDepsOf(h), [victim, bystander]);
      await untilAllTerminal(h, [victim.batchId, bystander.batchId]);
      await expectSyncedOnce(victim);
      await expectSyncedOnce(bystander);
      expect(injectedSince(before)[fault]).toBe(1);

      // The one call that got the bad body is on record, on one batch, with a reason an operator can read.
      const timelines = await Promise.all(
        [victim, bystander].map((e) => readTimeline(h.runtime.database.db, { instituteId: institute(), batchId: e.batchId })),
      );
      const hit = timelines.flat().filter((e) => e?.type === 'remote_call' && e.operation === operation && e.outcome !== 'ok');
      expect(hit, JSON.stringify(hit)).toHaveLength(1);
      expect(hit[0]).toMatchObject({ outcome: 'outcome_unknown', httpStatus: 200 });
      expect(hit[0]!.error).toMatch(new RegExp(`^${operation} answered HTTP 200 with a body that is not the JSON envelope`));
    });

    it('the worker is still running after all of it', async () => {
      await workerStillSyncs();
      const stuck = await h.runtime.database.db.select({ batchId: batchClasses.batchId }).from(batchClasses).where(eq(batchClasses.state, 'creating'));
      expect(stuck).toEqual([]);
    });
  });
});

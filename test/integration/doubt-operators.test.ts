// An operator's hands on a batch in doubt (its add-class sent, its outcome never settled): abandoning
// it says a class may exist, reconciliation keeps reporting it until a class is found or the operator
// rules it out (`abandon --confirm-no-class`), and an undo returns it to where its facts lead. Real
// PostgreSQL, Redis and the sandbox; runs driven one at a time (test/helpers/runs.ts).
import { describe, expect, it } from 'vitest';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { abandonBatches, undoAbandon } from '../../src/sync/abandon-batches.ts';
import { runBatch } from '../../src/sync/machine.ts';
import { retryBatches } from '../../src/sync/retry-batches.ts';
import { rowOf } from '../helpers/batches.ts';
import { killAllChildren, runCli } from '../helpers/cli.ts';
import { type Harness, publishDepsOf } from '../helpers/harness.ts';
import { addClassCalls, keyOf, runDeps, runToRest } from '../helpers/runs.ts';
import { reconcileOnce } from '../helpers/reconcile.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h, defer } = useHarness();
defer(killAllChildren);

/**
 * A batch in `needs_review` whose add-class's outcome is unknown: `made` says whether the remote made
 * the class (its answer lost) or not (a 5xx before it acted); the listing is refused on the job's
 * last attempt, so nothing settles it.
 */
async function inReview(h: Harness, batchId: string, made: boolean): Promise<void> {
  await publishBatchCreated(publishDepsOf(h), { batchId, name: `Review ${batchId}`, subject: 'Logic' });
  h.sandbox.faults.enqueue({ operation: 'addClass', fault: made ? 'lostResponse' : 'error5xx' });
  await runBatch(runDeps(h), keyOf(h, batchId), 1).catch(() => undefined);
  h.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'bodyRejected' });
  await runBatch(runDeps(h), keyOf(h, batchId), 2, { lastAttempt: true }).catch(() => undefined);
  expect(await rowOf(h, batchId), 'precondition').toMatchObject({ state: 'needs_review', classId: null, lastErrorKind: 'listing_refused' });
}

const reconcile = () => reconcileOnce(h);

const reported = async (batchId: string) => (await reconcile()).unresolved.filter((u) => u.batchId === batchId);

describe('a batch abandoned while a class of it may exist', () => {
  it('is reported until the operator rules the class out; an undo then leaves it failed, and a retry sends one add-class', async () => {
    await inReview(h, 'op-none', false);
    const [abandoned] = await abandonBatches({ db: h.runtime.database.db, queue: h.runtime.queue, logger: h.runtime.logger }, [keyOf(h, 'op-none')]);
    expect(abandoned).toMatchObject({ outcome: 'abandoned', from: 'needs_review', mayHaveClass: true, message: expect.stringContaining('--confirm-no-class') });
    expect(await reported('op-none')).toEqual([expect.objectContaining({ detail: expect.stringContaining('none is listed yet') })]);

    // The CLI takes the operator's word, once they have checked the listing.
    const env = { ...h.env, LOG_LEVEL: 'silent' };
    const cli = await runCli(['abandon', '--confirm-no-class', '--reason', 'checked the listing', 'op-none'], { env });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain('op-none: already abandoned; no class of it exists, as you confirmed');
    expect(await rowOf(h, 'op-none')).toMatchObject({ state: 'abandoned', createSentAt: null });
    expect(await reported('op-none')).toEqual([]);

    const [undone] = await undoAbandon({ db: h.runtime.database.db, queue: h.runtime.queue, logger: h.runtime.logger }, [keyOf(h, 'op-none')]);
    expect(undone).toMatchObject({ outcome: 'restored', to: 'failed' });
    const before = addClassCalls(h);
    await retryBatches({ db: h.runtime.database.db, queue: h.runtime.queue }, { keys: [keyOf(h, 'op-none')] });
    expect(await runToRest(h, 'op-none')).toMatchObject({ state: 'synced' });
    expect(addClassCalls(h) - before).toBe(1);
  });

  it('names the listed class that may be its (not an orphan); an undo returns it to needs_review, and a retry adopts that class', async () => {
    await inReview(h, 'op-made', true);
    await abandonBatches({ db: h.runtime.database.db, queue: h.runtime.queue, logger: h.runtime.logger }, [keyOf(h, 'op-made')]);
    const report = await reconcile();
    const [entry] = report.unresolved.filter((u) => u.batchId === 'op-made');
    expect(entry?.detail).toContain('may be its');
    expect(report.findings.orphan_remote.filter((f) => f.className === 'Review op-made')).toEqual([]);

    await expect(runCli(['abandon', '--undo', '--confirm-no-class', 'op-made'], { env: { ...h.env, LOG_LEVEL: 'silent' } })).resolves.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('cannot be used with option'),
    });
    const [undone] = await undoAbandon({ db: h.runtime.database.db, queue: h.runtime.queue, logger: h.runtime.logger }, [keyOf(h, 'op-made')]);
    expect(undone).toMatchObject({ outcome: 'restored', to: 'needs_review' });
    const before = addClassCalls(h);
    await retryBatches({ db: h.runtime.database.db, queue: h.runtime.queue }, { keys: [keyOf(h, 'op-made')] });
    const row = await runToRest(h, 'op-made');
    expect(row.state).toBe('synced');
    expect(addClassCalls(h)).toBe(before);
    expect(h.sandbox.state().byName['Review op-made']).toBe(1);
  });
});

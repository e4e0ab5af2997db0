// The spine end to end: events → Postgres → BullMQ → sandbox over HTTP → Postgres.
import { describe, expect, it } from 'vitest';
import { publishBatchCreated, publishBatches } from '../../src/intake/publish.ts';
import { InvalidEventError } from '../../src/intake/schema.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { rowOf, rowsOf, untilAllSynced, untilSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';

const { h } = useHarnessWithWorker();

describe('core pipeline', () => {
  it('syncs 200 events into 200 synced rows whose ClassID and join link match the remote, with exactly 200 classes', async () => {
    const events = Array.from({ length: 200 }, (_, i) => ({ batchId: `b-${i}`, name: `Batch ${i}`, subject: 'Maths' }));
    const outcomes = await publishBatches(publishDepsOf(h), events);
    expect(outcomes.every((o) => o.ok && o.state === 'pending' && !o.duplicate && o.queued)).toBe(true);

    await waitFor(async () => (await rowsOf(h)).filter((r) => r.state === 'synced').length === 200, '200 synced rows', 120_000);
    const all = (await rowsOf(h)).filter((r) => r.batchId.startsWith('b-'));
    expect(all).toHaveLength(200);
    const truth = h.sandbox.state().classes!;
    expect(truth.filter((c) => c.name.startsWith('Batch '))).toHaveLength(200);
    const byId = new Map(truth.map((c) => [c.id, c]));
    for (const row of all) {
      expect(row.classId).toMatch(/^[0-9a-f]{24}$/);
      const remote = byId.get(row.classId!);
      expect(remote?.name).toBe(row.className);
      expect(row.joinLink).toBe(remote?.joinMagicLink);
      expect(row.joinLink).not.toBe('');
      expect(row.syncedAt).toBeInstanceOf(Date);
    }
    // Spot-check against get-class itself, through the same client the worker uses.
    const sample = all[17]!;
    const record = await h.runtime.remotes.default.classroom.getClass(sample.classId!);
    expect(record.joinMagicLink).toBe(sample.joinLink);
  });

  it('publishing the same event three times creates one class', async () => {
    const event = { batchId: 'dup-1', name: 'Thrice Sent', subject: 'Physics' };
    const first = await publishBatchCreated(publishDepsOf(h), event);
    const second = await publishBatchCreated(publishDepsOf(h), event);
    expect(first.duplicate).toBe(false);
    expect(second.duplicate).toBe(true);
    await untilSynced(h, 'dup-1');
    const third = await publishBatchCreated(publishDepsOf(h), event);
    expect(third).toMatchObject({ duplicate: true, state: 'synced', queued: false });
    expect(h.sandbox.state().byName['Thrice Sent']).toBe(1);
  });

  it('a duplicate event for a synced batch makes no remote call', async () => {
    const before = JSON.stringify(h.sandbox.state().calls);
    const outcome = await publishBatchCreated(publishDepsOf(h), { batchId: 'b-3', name: 'Batch 3', subject: 'Maths' });
    // Nothing queued, so nothing will run for it: no job of it waits in either queue.
    expect(outcome).toMatchObject({ duplicate: true, state: 'synced', queued: false });
    const jobId = jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'b-3' });
    for (const queue of [h.runtime.queue, h.runtime.queue.background]) {
      expect(['waiting', 'prioritized', 'delayed', 'active']).not.toContain(await (await queue.getJob(jobId))?.getState());
    }
    expect(JSON.stringify(h.sandbox.state().calls)).toBe(before);
  });

  it('rejects malformed events with the field and reason, and still syncs the valid ones beside them', async () => {
    const outcomes = await publishBatches(publishDepsOf(h), [
      { batchId: 'ok-1', name: 'Fine', subject: 'Art' },
      { name: 'No id', subject: 'Art' },
      { batchId: 'bad-2', name: '', subject: 'Art' },
      { batchId: 'bad-3', name: 'x', subject: 'Art', instituteId: '../etc' },
      'not an object',
      { batchId: 'ok-2', name: 'Also fine', subject: 'Art', classType: 'LIVE' },
    ]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, false, false, false, true]);
    expect(outcomes[1]).toMatchObject({ ok: false, problems: [{ field: 'batchId', reason: 'is required' }] });
    expect(outcomes[2]).toMatchObject({ ok: false, problems: [{ field: 'name', reason: 'must not be empty' }] });
    expect(outcomes[3]).toMatchObject({ ok: false, problems: [{ field: 'instituteId' }] });
    expect(outcomes[4]).toMatchObject({ ok: false, problems: [{ field: '(event)', reason: 'must be a JSON object' }] });
    await expect(publishBatchCreated(publishDepsOf(h), { batchId: 'x' })).rejects.toThrow(InvalidEventError);
    await expect(publishBatchCreated(publishDepsOf(h), { batchId: 'x' })).rejects.toThrow(/name is required; subject is required/);

    await untilAllSynced(h, ['ok-2', 'ok-1']);
    expect(await rowOf(h, 'bad-2')).toBeUndefined();
    const extra = h.sandbox.state().classes!.find((c) => c.name === 'Also fine');
    expect(extra?.classType).toBe('LIVE');
  });
});

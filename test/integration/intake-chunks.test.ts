// A call with more events than one statement takes (enqueue and import pass 5,000 at a time, the
// library any number) is recorded 1,000 at a time, each chunk recorded while the one before it is
// queued. Whatever overlaps, the answers come in the order of the events, every new batch gets its
// job, an update applies after the batch it changes, and an institute's batches keep their order.
import { describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { bothQueues } from '../../src/sync/queue.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h } = useHarness();

describe('intake in chunks', () => {
  it('answers in order, queues every batch, and applies changes after the batches they change', async () => {
    const deps = publishDepsOf(h);
    const created = (i: number) => ({ batchId: `ch-${i}`, name: `Chunk ${i}`, subject: 'Art', instituteId: `inst-${i % 3}` });
    const events: Record<string, unknown>[] = [];
    for (let i = 0; i < 1_500; i += 1) events.push(created(i));
    // In the second chunk: an update of a batch of the first, then more new ones.
    events.push({ type: 'batch.updated', batchId: 'ch-7', instituteId: 'inst-1', name: 'Renamed seven', version: 2 });
    for (let i = 1_500; i < 2_600; i += 1) events.push(created(i));
    // In the last chunk: a batch of the first again, with a newer version (its values applied), and one again without.
    events.push({ ...created(8), name: 'Eight, newer', version: 3 });
    events.push(created(9));

    const outcomes = await publishBatches(deps, events, { lane: 'backfill' });

    expect(outcomes.map((o) => (o.ok ? o.batchId : 'rejected'))).toEqual(events.map((e) => e.batchId));
    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    expect(outcomes.filter((o) => o.ok && o.outcome === 'recorded')).toHaveLength(2_600);
    expect(outcomes[1_500]).toMatchObject({ ok: true, batchId: 'ch-7', outcome: 'applied' });
    expect(outcomes.at(-2)).toMatchObject({ ok: true, batchId: 'ch-8', outcome: 'applied' });
    expect(outcomes.at(-1)).toMatchObject({ ok: true, batchId: 'ch-9', duplicate: true });
    expect(outcomes.every((o) => o.ok && o.queued)).toBe(true);

    const pool = h.runtime.database.pool;
    const { rows: names } = await pool.query<{ batch_id: string; class_name: string }>(
      `select batch_id, class_name from batch_classes where batch_id in ('ch-7', 'ch-8') order by batch_id`,
    );
    expect(names.map((r) => r.class_name)).toEqual([expect.stringContaining('Renamed seven'), expect.stringContaining('Eight, newer')]);
    // Each institute's line in the order its batches came.
    const { rows: lines } = await pool.query<{ institute_id: string; batch_id: string }>(
      `select institute_id, batch_id from batch_classes where state = 'pending' order by institute_id, line`,
    );
    for (const institute of ['inst-0', 'inst-1', 'inst-2']) {
      const order = lines.filter((r) => r.institute_id === institute).map((r) => Number(r.batch_id.slice(3)));
      expect(order).toEqual([...order].sort((a, b) => a - b));
      expect(order).toHaveLength(institute === 'inst-0' ? 867 : 867 - (institute === 'inst-2' ? 1 : 0));
    }
    // Every new batch has its job.
    const queues = bothQueues(h.runtime.queue);
    for (const i of [0, 999, 1_000, 1_999, 2_000, 2_599]) {
      const states = await Promise.all(queues.map((q) => q.getJobState(jobIdFor({ instituteId: `inst-${i % 3}`, batchId: `ch-${i}` }))));
      expect(
        states.some((s) => s !== 'unknown'),
        `job of ch-${i}`,
      ).toBe(true);
    }
  });
});

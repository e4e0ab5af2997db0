// POST /v1/batches with updates and cancellations over real HTTP: types and versions, all-or-nothing
// refusal of a change for a batch never recorded, the outcome of each event, and the read API.
import { describe, expect, it } from 'vitest';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, call, useTestWorker } from './http-helpers.ts';

const harness = useHarness();
const { h } = harness;
const w = useTestWorker(harness);

const post = (json: unknown) => call(`${w.url}/v1/batches`, { method: 'POST', headers: BEARER, json });
const get = (batchId: string) => call(`${w.url}/v1/batches/${batchId}`, { headers: BEARER });

describe('POST /v1/batches with changes', () => {
  it('answers each event with its type and outcome; the read API shows the version, the pending change and the cancellation', async () => {
    const created = await post({ batchId: 'h-1', name: 'Web One', subject: 'Maths', version: 1 });
    expect(created.status).toBe(202);
    expect(created.body.batches[0]).toMatchObject({ type: 'batch.created', outcome: 'recorded' });
    const synced = await untilSynced(h, 'h-1');

    const changes = await post([
      { type: 'batch.updated', batchId: 'h-1', subject: 'Physics', version: 2 },
      { type: 'batch.updated', batchId: 'h-1', subject: 'Chemistry', version: 2 },
    ]);
    expect(changes.status).toBe(202);
    expect(changes.body.batches.map((b: { outcome: string }) => b.outcome)).toEqual(['applied', 'stale']);
    await waitFor(async () => {
      const r = await rowOf(h, 'h-1');
      return r && r.revision === r.appliedRevision && r.appliedEvent?.subject === 'Physics' ? r : undefined;
    }, 'the subject edited');
    const view = await get('h-1');
    expect(view.body).toMatchObject({ state: 'synced', classId: synced.classId, version: 2, changePending: null, cancelled: null });

    const cancel = await post({ type: 'batch.cancelled', batchId: 'h-1', version: 3 });
    expect(cancel.body.batches[0]).toMatchObject({ type: 'batch.cancelled', outcome: 'applied' });
    await waitFor(async () => ((await rowOf(h, 'h-1'))?.state === 'cancelled' ? true : undefined), 'cancelled');
    const after = await get('h-1');
    expect(after.body).toMatchObject({ state: 'cancelled', version: 3, cancelled: { archived: true } });
    const metrics = await call(`${w.url}/metrics`);
    expect(metrics.text).toMatch(/^classroom_sync_batches\{state="cancelled"\} 1$/m);
    const events = await call(`${w.url}/v1/batches/h-1/events`, { headers: BEARER });
    expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['updated', 'stale', 'class_edited', 'cancel_requested']));
  });

  it('refuses the whole array when a change names a batch never recorded (400 by index and field); nothing is recorded', async () => {
    const answer = await post([
      { batchId: 'h-new', name: 'Fresh', subject: 'Art' },
      { type: 'batch.updated', batchId: 'h-new', name: 'Fresher' },
      { type: 'batch.cancelled', batchId: 'h-ghost' },
      { type: 'batch.updated', batchId: 'h-1', version: 'seven', name: 'x' },
    ]);
    expect(answer.status).toBe(400);
    expect(answer.body.problems).toEqual([{ path: '[3].version', reason: 'must be a positive integer' }]);
    const unknown = await post([
      { batchId: 'h-new', name: 'Fresh', subject: 'Art' },
      { type: 'batch.updated', batchId: 'h-new', name: 'Fresher' },
      { type: 'batch.cancelled', batchId: 'h-ghost' },
    ]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.problems).toEqual([{ path: '[2].batchId', reason: expect.stringContaining('is not recorded') }]);
    expect(await rowOf(h, 'h-new')).toBeUndefined();
  });
});

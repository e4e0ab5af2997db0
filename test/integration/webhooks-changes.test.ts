// Webhooks for batches that change: an edit that reached the class of a synced batch is told as
// batch.updated, a cancellation as batch.cancelled, each verified with the reference library.
import { describe, expect, it } from 'vitest';
import { publishBatchCancelled, publishBatchCreated, publishBatchUpdated } from '../../src/intake/publish.ts';
import { untilSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { newSecret, startReceiver, verify } from '../helpers/webhook-receiver.ts';
import { startTestWorker } from './http-helpers.ts';

const each = useHarnessPerTest();

describe('webhooks of changed batches', () => {
  it('tells batch.synced, then batch.updated with the new class name, then batch.cancelled with the class archived', async () => {
    const receiver = await startReceiver();
    each.defer(() => receiver.close());
    const secret = newSecret();
    const h = await each.harness();
    const worker = await startTestWorker(h, { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret });
    each.defer(() => worker.stop());
    const deps = publishDepsOf(h);
    await publishBatchCreated(deps, { batchId: 'w-1', name: 'Before', subject: 'Maths', version: 1 });
    const synced = await untilSynced(h, 'w-1');
    await waitFor(() => receiver.received.length >= 1 || undefined, 'batch.synced');
    await publishBatchUpdated(deps, { batchId: 'w-1', name: 'After', version: 2 });
    await waitFor(() => receiver.received.length >= 2 || undefined, 'batch.updated');
    await publishBatchCancelled(deps, { batchId: 'w-1', version: 3 });
    await waitFor(() => receiver.received.length >= 3 || undefined, 'batch.cancelled');

    const messages = receiver.received.map((r) => {
      expect(() => verify(secret, r)).not.toThrow();
      return r.message;
    });
    expect(messages.map((m) => m.type)).toEqual(['batch.synced', 'batch.updated', 'batch.cancelled']);
    expect(messages[1]).toMatchObject({ data: { batchId: 'w-1', state: 'synced', classId: synced.classId, className: 'After', subject: 'Maths', version: 2 } });
    expect(messages[1]?.data).not.toHaveProperty('joinLink');
    expect(messages[2]).toMatchObject({ data: { batchId: 'w-1', state: 'cancelled', classId: synced.classId, archived: true, version: 3 } });
  });
});

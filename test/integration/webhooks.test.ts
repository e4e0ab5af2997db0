// Webhooks: every settled batch is told to the integrator's endpoint by a Standard Webhooks message
// that the reference library verifies, from an outbox PostgreSQL writes beside the state change.
import { describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { rowOf, untilAllSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { newSecret, startReceiver, verify } from '../helpers/webhook-receiver.ts';
import { startTestWorker } from './http-helpers.ts';

const each = useHarnessPerTest();

const batches = (n: number, prefix = 'Hook') =>
  Array.from({ length: n }, (_, i) => ({ batchId: `${prefix.toLowerCase()}-${i}`, name: `${prefix} class ${String(i).padStart(3, '0')}`, subject: 'Maths' }));

describe('webhooks', () => {
  it('tells every synced batch, signed with each secret, with the stored class id and join link, under one message id', async () => {
    const receiver = await startReceiver();
    each.defer(() => receiver.close());
    const [older, newer] = [newSecret(), newSecret()];
    const h = await each.harness();
    const worker = await startTestWorker(h, { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: `${older} ${newer}` });
    each.defer(() => worker.stop());
    await publishBatches(publishDepsOf(h), batches(5));
    const rows = await untilAllSynced(h, { count: 5 });
    await waitFor(() => receiver.received.length >= 5 || undefined, 'five messages');

    for (const row of rows) {
      const got = receiver.received.filter((r) => r.message.data.batchId === row.batchId);
      expect(got, row.batchId).toHaveLength(1);
      const [request] = got;
      // Either secret alone verifies: the endpoint may be on the old one or the new one mid-rotation.
      expect(() => verify(older, request!)).not.toThrow();
      expect(() => verify(newer, request!)).not.toThrow();
      expect(() => verify(newSecret(), request!)).toThrow();
      expect(request!.headers['content-type']).toBe('application/json');
      expect(request!.headers['user-agent']).toMatch(/^classroom-sync\/\d+\.\d+\.\d+/);
      expect(request!.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(request!.message).toMatchObject({
        type: 'batch.synced',
        data: {
          instituteId: row.instituteId,
          batchId: row.batchId,
          classId: row.classId,
          joinLink: row.joinLink,
          state: 'synced',
          syncedAt: row.syncedAt?.toISOString(),
        },
      });
      expect(new Date(request!.message.timestamp).toISOString()).toBe(request!.message.timestamp);
    }
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(5);
    expect((await rowOf(h, 'hook-0'))?.state).toBe('synced');
  });
});

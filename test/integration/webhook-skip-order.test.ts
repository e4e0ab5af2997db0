// A worker without an endpoint records `skipped` only what no worker of the fleet can send; it must
// also respect a batch's order, as a claim does: a batch's later message is decided only after its
// earlier ones. Otherwise, while the worker with the endpoint is away for a moment (a rolling restart
// withdraws its route; a killed one's route goes stale while its claim is held), the later message
// of a batch is skipped while the earlier one still waits (in its retry's backoff, or claimed), and
// once the endpoint is back the earlier one is delivered: the receiver hears `batch.synced` and never
// what came after it.
import { describe, expect, it } from 'vitest';
import { type Harness, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { type TestDispatcher, routeSeen, startTestDispatcher } from '../helpers/webhook-dispatchers.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';

const each = useHarnessPerTest();

const dispatcher = (h: Harness, options: TestDispatcher) => startTestDispatcher(h, each.defer, options);

describe('skipping keeps a batch in order', () => {
  it("a batch's later message is not skipped while its earlier one waits, and is delivered after it once the endpoint is back", async () => {
    const h = await each.harness();
    const sqlq = (text: string, values: unknown[] = []) => h.runtime.database.pool.query(text, values);
    // Batch b-1 of inst-a synced (message 1), then its join link changed (message 2, a new batch.synced).
    // Batch x-1 of inst-x, which no worker can ever send: its skip shows the bare worker has polled.
    await sqlq(
      `insert into batch_classes (institute_id, batch_id, class_name, event, state, class_id, join_link, synced_at)
       values ('inst-a', 'b-1', 'Order', '{"batchId":"b-1","name":"Order","subject":"S","instituteId":"inst-a","extra":{}}'::jsonb,
               'synced', 'class-1', 'https://classroom.example/join/first', now())`,
    );
    // Message 1 was tried once by the worker with the endpoint (which answered 503) and waits for its
    // retry: that worker then stopped for a rolling restart (its route withdrawn).
    await sqlq(
      `update webhook_messages set attempts = 1, last_status = 503, next_attempt_at = now() + interval '1 hour'
        where batch_id = 'b-1'`,
    );
    await sqlq(`update batch_classes set join_link = 'https://classroom.example/join/second' where batch_id = 'b-1'`);
    await sqlq(
      `insert into batch_classes (institute_id, batch_id, class_name, event, state, class_id, join_link, synced_at)
       values ('inst-x', 'x-1', 'Nobody', '{"batchId":"x-1","name":"Nobody","subject":"S","instituteId":"inst-x","extra":{}}'::jsonb,
               'synced', 'class-x', 'https://classroom.example/join/x', now())`,
    );
    const batchStatuses = async () =>
      (await sqlq(`select status from webhook_messages where batch_id = 'b-1' order by id`)).rows.map((r) => r.status as string);
    expect(await batchStatuses()).toEqual(['pending', 'pending']);

    // The worker without an endpoint polls while no route covers inst-a.
    const bare = dispatcher(h, { institutes: [], pollMs: 50, id: 'bare' });
    await waitFor(
      async () => (await sqlq(`select status from webhook_messages where batch_id = 'x-1'`)).rows[0]?.status === 'skipped' || undefined,
      "inst-x's message skipped (the bare worker polled)",
    );
    // Message 2 must wait for message 1: skipping it now decides the batch out of order.
    expect(await batchStatuses()).toEqual(['pending', 'pending']);
    await bare.close(0);

    // The worker with the endpoint is back; message 1's retry comes due.
    const endpoint = await startReceiver();
    each.defer(() => endpoint.close());
    dispatcher(h, { institutes: ['inst-a'], receiver: endpoint, pollMs: 50, id: 'configured' });
    await waitFor(routeSeen(h, 'configured'), 'the configured dispatcher known to the fleet');
    await sqlq(`update webhook_messages set next_attempt_at = now() where batch_id = 'b-1' and status = 'pending'`);
    await waitFor(async () => (await batchStatuses()).every((s) => s === 'delivered') || undefined, "batch b-1's messages delivered");
    expect(endpoint.received.map((r) => r.message.data.joinLink)).toEqual(['https://classroom.example/join/first', 'https://classroom.example/join/second']);
  });
});

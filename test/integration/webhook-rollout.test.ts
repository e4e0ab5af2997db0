// A rolling deploy that turns webhooks on: for a while some workers have the endpoint and some do
// not. A worker without it never records `skipped` a message that a worker of the fleet can send
// (webhook_routes, read in the skip's own statement); it records skipped only what no worker seen in
// the last minute can send, as before. And a dispatcher claims only messages it has an endpoint for.
import { describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { outbox } from '../../src/mapping/index.ts';
import { untilAllSynced } from '../helpers/batches.ts';
import { type Harness, publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { type TestDispatcher, routeSeen, startTestDispatcher } from '../helpers/webhook-dispatchers.ts';
import { type Receiver, newSecret, startReceiver } from '../helpers/webhook-receiver.ts';
import { startTestWorker } from './http-helpers.ts';

const each = useHarnessPerTest();

/** `n` batches of `institute` moved to synced in one statement: the trigger writes one batch.synced message each. */
async function syncedBatches(h: Harness, batches: { institute: string; prefix: string; n: number }[]): Promise<void> {
  const sqlq = (text: string, values: unknown[]) => h.runtime.database.pool.query(text, values);
  for (const { institute, prefix, n } of batches) {
    await sqlq(
      `insert into batch_classes (institute_id, batch_id, class_name, event)
       select $1::text, $2::text || g, 'Rollout ' || $2::text || g, jsonb_build_object('batchId', $2::text || g, 'name', 'Rollout ' || g, 'subject', 'S', 'instituteId', $1::text, 'extra', '{}'::jsonb)
         from generate_series(1, $3::int) g`,
      [institute, prefix, n],
    );
  }
  // One statement for all: their messages are written in one transaction, due at the same moment.
  await sqlq(
    `update batch_classes set state = 'synced', class_id = 'class-' || id, join_link = 'https://classroom.example/join/' || id, synced_at = now()
      where batch_id like any($1::text[])`,
    [batches.map((b) => `${b.prefix}%`)],
  );
}

const statuses = async (h: Harness, institute: string) =>
  (await outbox.listDeliveries(h.runtime.database.db, { instituteId: institute, limit: 1_000 })).map((m) => m.status);

const dispatcher = (h: Harness, options: TestDispatcher) => startTestDispatcher(h, each.defer, options);

async function receiver(): Promise<Receiver> {
  const started = await startReceiver();
  each.defer(() => started.close());
  return started;
}

describe('webhooks during a rollout', () => {
  it("a worker without the endpoint leaves institute A's messages to the one that has it, and still skips what nobody can send", async () => {
    const h = await each.harness();
    const endpoint = await receiver();
    // Polls only when nudged: until then, only the worker without an endpoint looks at the outbox.
    const configured = dispatcher(h, { institutes: ['inst-a'], receiver: endpoint, pollMs: 600_000, id: 'configured' });
    await waitFor(routeSeen(h, 'configured'), 'the configured dispatcher known to the fleet');
    dispatcher(h, { institutes: [], pollMs: 50, id: 'bare' });

    await syncedBatches(h, [
      { institute: 'inst-a', prefix: 'a-', n: 5 },
      { institute: 'inst-b', prefix: 'b-', n: 1 },
    ]);
    // inst-b's message was skipped by the statement that also saw inst-a's, written with it.
    await waitFor(async () => (await statuses(h, 'inst-b')).join() === 'skipped' || undefined, "inst-b's message skipped (nobody can send it)");
    expect(await statuses(h, 'inst-a')).toEqual(Array(5).fill('pending'));

    configured.nudge();
    await waitFor(async () => (await statuses(h, 'inst-a')).every((s) => s === 'delivered') || undefined, "inst-a's messages delivered");
    expect(new Set(endpoint.received.map((r) => r.message.data.batchId))).toEqual(new Set(['a-1', 'a-2', 'a-3', 'a-4', 'a-5']));
    expect(endpoint.received.map((r) => r.message.data.instituteId)).not.toContain('inst-b');

    // The only worker with the endpoint closes: what it can no longer send is skipped, as before.
    await configured.close(0);
    expect(await routeSeen(h, 'configured')()).toBeUndefined();
    await syncedBatches(h, [{ institute: 'inst-a', prefix: 'late-a-', n: 1 }]);
    await waitFor(async () => (await statuses(h, 'inst-a')).includes('skipped') || undefined, 'the later message skipped');
  });

  it('a route not renewed for a minute (its worker was killed) keeps nothing from being skipped; one unseen for 10 minutes is deleted', async () => {
    const h = await each.harness();
    const sqlq = (text: string) => h.runtime.database.pool.query(text);
    await sqlq(`insert into webhook_routes (dispatcher_id, institute_ids, seen_at) values ('killed', '{inst-a}', now() - interval '61 seconds')`);
    await sqlq(`insert into webhook_routes (dispatcher_id, institute_ids, seen_at) values ('long-gone', '{inst-a}', now() - interval '11 minutes')`);
    dispatcher(h, { institutes: ['inst-c'], receiver: await receiver(), pollMs: 600_000, id: 'configured' });
    await waitFor(routeSeen(h, 'configured'), 'the configured dispatcher known to the fleet');
    const { rows } = await sqlq('select dispatcher_id as id from webhook_routes order by 1');
    expect(rows.map((r) => r.id)).toEqual(['configured', 'killed']);

    dispatcher(h, { institutes: [], pollMs: 50, id: 'bare' });
    await syncedBatches(h, [
      { institute: 'inst-a', prefix: 'a-', n: 2 },
      { institute: 'inst-c', prefix: 'c-', n: 1 },
      { institute: 'inst-x', prefix: 'x-', n: 1 },
    ]);
    await waitFor(async () => (await statuses(h, 'inst-x')).join() === 'skipped' || undefined, "inst-x's message skipped (nobody can send it)");
    expect(await statuses(h, 'inst-a')).toEqual(['skipped', 'skipped']);
    expect(await statuses(h, 'inst-c')).toEqual(['pending']);
  });

  it('two workers with endpoints for different institutes each send only their own, and skip none of the other', async () => {
    const h = await each.harness();
    const [north, south] = [await receiver(), await receiver()];
    dispatcher(h, { institutes: ['inst-n'], receiver: north, pollMs: 50, id: 'north' });
    dispatcher(h, { institutes: ['inst-s'], receiver: south, pollMs: 50, id: 'south' });
    await waitFor(routeSeen(h, 'north'), 'north known to the fleet');
    await waitFor(routeSeen(h, 'south'), 'south known to the fleet');
    await syncedBatches(h, [
      { institute: 'inst-n', prefix: 'n-', n: 6 },
      { institute: 'inst-s', prefix: 's-', n: 6 },
    ]);
    await waitFor(
      async () => [...(await statuses(h, 'inst-n')), ...(await statuses(h, 'inst-s'))].every((s) => s === 'delivered') || undefined,
      'every message delivered',
    );
    expect(north.received.map((r) => r.message.data.instituteId)).toEqual(Array(6).fill('inst-n'));
    expect(south.received.map((r) => r.message.data.instituteId)).toEqual(Array(6).fill('inst-s'));
  });

  it('worker processes: one with WEBHOOK_URL, one without; every message is delivered, none skipped; the last one with it stopping, the next is skipped', async () => {
    const h = await each.harness();
    const endpoint = await receiver();
    const bare = await startTestWorker(h);
    each.defer(() => bare.stop());
    const configured = await startTestWorker(h, { WEBHOOK_URL: endpoint.url, WEBHOOK_SECRET: newSecret() });
    each.defer(() => configured.stop());
    await waitFor(routeSeen(h, configured.runtime.workerId), 'the configured worker known to the fleet');
    const { rows } = await h.runtime.database.pool.query('select dispatcher_id as id, institute_ids as institutes from webhook_routes');
    expect(rows).toEqual([{ id: configured.runtime.workerId, institutes: null }]);

    const events = Array.from({ length: 8 }, (_, i) => ({ batchId: `roll-${i}`, name: `Rollout class ${i}`, subject: 'Maths' }));
    await publishBatches(publishDepsOf(h), events);
    await untilAllSynced(h, { count: 8 });
    const inst = h.config.classroom.instituteId;
    await waitFor(async () => (await statuses(h, inst)).every((s) => s === 'delivered') || undefined, 'every message delivered');
    expect(new Set(endpoint.received.map((r) => r.message.data.batchId)).size).toBe(8);

    await configured.stop();
    await publishBatches(publishDepsOf(h), [{ batchId: 'after', name: 'After the rollback', subject: 'Maths' }]);
    await waitFor(async () => (await statuses(h, inst)).includes('skipped') || undefined, 'the next message skipped');
  });
});

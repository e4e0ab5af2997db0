// Webhooks: every settled batch is told to the integrator's endpoint by a Standard Webhooks message
// that the reference library verifies, from an outbox PostgreSQL writes beside the state change.
import { describe, expect, it } from 'vitest';
import { publishBatchCreated, publishBatches } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { outbox } from '../../src/mapping/index.ts';
import { abandonBatches, undoAbandon } from '../../src/sync/abandon-batches.ts';
import { writeAccountsFile } from '../helpers/accounts.ts';
import { rowOf, untilAllSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { newSecret, startReceiver, verify } from '../helpers/webhook-receiver.ts';
import { call, startTestWorker } from './http-helpers.ts';

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

  it("tells a failure, an abandon and its undo in order: a batch's later message waits until the earlier one is delivered", async () => {
    const receiver = await startReceiver();
    each.defer(() => receiver.close());
    // The first message fails until its batch has two more messages waiting: they must not overtake it.
    let released = false;
    receiver.answer = (request) => (request.message.type === 'batch.failed' && !released ? 503 : 200);
    const secret = newSecret();
    const h = await each.harness();
    const worker = await startTestWorker(h, { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, WEBHOOK_RETRY_SCHEDULE: '200ms' });
    each.defer(() => worker.stop());
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
    await publishBatchCreated(publishDepsOf(h), { batchId: 'ordered', name: 'Ordered class', subject: 'Maths' });
    await waitFor(async () => (await rowOf(h, 'ordered'))?.state === 'failed', 'ordered failed');
    const key = [{ instituteId: h.config.classroom.instituteId, batchId: 'ordered' }];
    const deps = { db: h.runtime.database.db, queue: h.runtime.queue, logger: h.runtime.logger };
    await abandonBatches(deps, key, { reason: 'created by mistake' });
    await undoAbandon(deps, key);
    await waitFor(() => receiver.received.length >= 2 || undefined, 'the failure refused twice');
    released = true;
    await waitFor(() => receiver.received.filter((r) => r.message.type === 'batch.abandon_undone').length === 1 || undefined, 'the undo told');

    const types = receiver.received.map((r) => r.message.type);
    const refused = types.length - 3;
    expect(refused).toBeGreaterThanOrEqual(2);
    expect(types).toEqual([...Array(refused + 1).fill('batch.failed'), 'batch.abandoned', 'batch.abandon_undone']);
    // Every attempt of one event carries its one id.
    expect([...receiver.byId().values()].map((requests) => requests.length)).toEqual([refused + 1, 1, 1]);
    for (const request of receiver.received) expect(() => verify(secret, request)).not.toThrow();
    const [failed, abandoned, undone] = [...receiver.byId().values()].map((requests) => requests[0]!.message);
    expect(failed?.data).toMatchObject({ batchId: 'ordered', state: 'failed', errorKind: 'rejected', attempts: 1, error: expect.stringMatching(/addClass/) });
    expect(abandoned?.data).toMatchObject({ state: 'abandoned', abandonedFrom: 'failed', reason: 'created by mistake' });
    expect(undone?.data).toMatchObject({ state: 'failed' });
  });

  it('tells a needs_review with its reason and the candidates it saw', async () => {
    const receiver = await startReceiver();
    each.defer(() => receiver.close());
    const h = await each.harness();
    const worker = await startTestWorker(h, { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: newSecret() });
    each.defer(() => worker.stop());
    const listed = h.sandbox.store.create({ name: 'Ambiguous', subject: 'History', instituteId: h.config.classroom.instituteId });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    await publishBatchCreated(publishDepsOf(h), { batchId: 'review-1', name: 'Ambiguous', subject: 'History' });
    const [request] = await waitFor(() => (receiver.received.length > 0 ? receiver.received : undefined), 'a message', 60_000);
    expect(request?.message).toMatchObject({ type: 'batch.needs_review', data: { batchId: 'review-1', state: 'needs_review', reason: expect.any(String) } });
    expect(request?.message.data.candidateIds).toContain(listed._id);
  });

  it("sends an account's institutes to its own endpoint, signed with its own secret; the rest to WEBHOOK_URL", async () => {
    const [north, everyone] = [await startReceiver(), await startReceiver()];
    each.defer(() => north.close());
    each.defer(() => everyone.close());
    const [northSecret, defaultSecret] = [newSecret(), newSecret()];
    const file = writeAccountsFile([{ name: 'north', webhookUrl: north.url, webhookSecret: northSecret }, { name: 'south' }]);
    each.defer(() => file.remove());
    const h = await each.harness({ env: { CLASSROOM_ACCOUNTS_FILE: file.path } });
    const worker = await startTestWorker(h, { WEBHOOK_URL: everyone.url, WEBHOOK_SECRET: defaultSecret });
    each.defer(() => worker.stop());
    await publishBatches(publishDepsOf(h), [
      { batchId: 'n-1', name: 'North class 1', subject: 'Maths', instituteId: 'inst-north' },
      { batchId: 's-1', name: 'South class 1', subject: 'Maths', instituteId: 'inst-south' },
    ]);
    await waitFor(() => (north.received.length === 1 && everyone.received.length === 1) || undefined, 'one message at each endpoint');
    expect(north.received[0]?.message.data).toMatchObject({ batchId: 'n-1', instituteId: 'inst-north' });
    expect(everyone.received[0]?.message.data).toMatchObject({ batchId: 's-1', instituteId: 'inst-south' });
    expect(() => verify(northSecret, north.received[0]!)).not.toThrow();
    expect(() => verify(defaultSecret, north.received[0]!)).toThrow();
    expect(() => verify(defaultSecret, everyone.received[0]!)).not.toThrow();
  });

  it('without an endpoint for its institute a message is recorded as skipped, not kept pending for ever', async () => {
    const h = await each.harness();
    const worker = await startTestWorker(h);
    each.defer(() => worker.stop());
    await publishBatches(publishDepsOf(h), batches(2, 'Quiet'));
    await untilAllSynced(h, { count: 2 });
    const messages = await waitFor(async () => {
      const all = await outbox.listDeliveries(h.runtime.database.db);
      return all.length === 2 && all.every((m) => m.status === 'skipped') ? all : undefined;
    }, 'both messages skipped');
    expect(messages.map((m) => m.type)).toEqual(['batch.synced', 'batch.synced']);
    expect(messages[0]?.lastError).toMatch(/no webhook endpoint is configured for institute/);
    expect(messages.every((m) => m.attempts === 0)).toBe(true);
  });

  it('tries a failing message until WEBHOOK_RETRY_FOR, the last attempt at its end rather than a wait later, then gives it up', async () => {
    const receiver = await startReceiver();
    each.defer(() => receiver.close());
    receiver.answer = () => 503;
    const h = await each.harness();
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(line) } });
    const secret = newSecret();
    // The schedule's next wait (1 h) ends far past the 6 s allowed: one more attempt, at the 6 s.
    // The window counts from the message's creation, and the delivery thread runs at the lowest
    // priority: on a loaded machine its start-up alone can take seconds, so it is awaited first.
    const worker = await startTestWorker(
      h,
      { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, WEBHOOK_RETRY_SCHEDULE: '1h', WEBHOOK_RETRY_FOR: '6s' },
      { logger },
    );
    each.defer(() => worker.stop());
    await waitFor(() => lines.some((l) => l.includes('"msg":"webhook delivery started"')) || undefined, 'the delivery thread started');
    await publishBatches(publishDepsOf(h), batches(1, 'Doomed'));
    const [message] = await waitFor(
      async () => {
        const all = await outbox.listDeliveries(h.runtime.database.db);
        return all[0]?.status === 'failed' ? all : undefined;
      },
      'the message given up',
      30_000,
    );
    expect(message).toMatchObject({ type: 'batch.synced', attempts: 2, lastStatus: 503, lastError: 'HTTP 503', nextAttemptAt: null });
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1]!.headers['webhook-id']).toBe(receiver.received[0]!.headers['webhook-id']);

    // Delivery runs on a thread of its own: its outcomes reach the worker's metrics, its lines the worker's log.
    await waitFor(async () => {
      const text = (await call(`${worker.url}/metrics`)).text;
      return /webhook_deliveries_total\{outcome="given_up"\} 1\b/.test(text) && /webhook_deliveries_total\{outcome="retry"\} 1\b/.test(text) ? text : undefined;
    }, 'one retry and one given_up counted');
    const givenUp = await waitFor(() => lines.map((l) => JSON.parse(l)).find((l) => l.msg?.startsWith('webhook message given up')), 'the given-up line');
    expect(givenUp).toMatchObject({
      level: 40,
      component: 'webhooks',
      service: 'classroom-sync',
      messageId: message!.messageId,
      batchId: 'doomed-0',
      attempts: 2,
    });
    expect(lines.join('\n')).not.toContain(secret.slice('whsec_'.length));
  });
});

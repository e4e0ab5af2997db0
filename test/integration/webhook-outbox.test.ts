// The outbox's dispatcher statements on the real PostgreSQL: attempts that finish together are
// recorded in one statement, each by its own outcome and fenced by its own attempt number.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';
import { outbox } from '../../src/mapping/index.ts';
import { startWebhookDelivery } from '../../src/webhooks/index.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { newSecret, startReceiver } from '../helpers/webhook-receiver.ts';

const { h } = useHarness();
const db = () => h.runtime.database.db;
const sqlq = (text: string, values: unknown[] = []) => h.runtime.database.pool.query(text, values);

/** `n` batches moved to synced in one statement: the trigger writes one batch.synced message each. */
async function syncedBatches(prefix: string, n: number): Promise<void> {
  const inst = h.config.classroom.instituteId;
  await sqlq(
    `insert into batch_classes (institute_id, batch_id, class_name, event)
     select $1::text, $2::text || g, 'Outbox ' || g, jsonb_build_object('batchId', $2::text || g, 'name', 'Outbox ' || g, 'subject', 'S', 'instituteId', $1::text, 'extra', '{}'::jsonb)
       from generate_series(1, $3::int) g`,
    [inst, prefix, n],
  );
  await sqlq(
    `update batch_classes set state = 'synced', class_id = 'class-' || id, join_link = 'https://classroom.example/join/' || id, synced_at = now()
      where batch_id like $1`,
    [`${prefix}%`],
  );
}

const messagesOf = async (prefix: string) =>
  (await outbox.listDeliveries(db(), { limit: 100 })).filter((m) => m.batchId.startsWith(prefix)).sort((a, b) => a.batchId.localeCompare(b.batchId));

describe('webhook outbox', () => {
  it('records delivered, retry, given-up and skipped attempts in one statement; a stale attempt changes nothing', async () => {
    await syncedBatches('rec-', 5);
    const claimed = (await outbox.claimDueMessages(db(), 10, 60_000)).sort((a, b) => a.batchId.localeCompare(b.batchId));
    expect(claimed.map((m) => [m.batchId, m.attempt])).toEqual([
      ['rec-1', 1],
      ['rec-2', 1],
      ['rec-3', 1],
      ['rec-4', 1],
      ['rec-5', 1],
    ]);
    const [delivered, retried, givenUp, skipped, stale] = claimed as [outbox.ClaimedMessage, ...outbox.ClaimedMessage[]];
    const statuses = await outbox.recordAttempts(db(), [
      { message: delivered, record: { outcome: 'delivered', status: 204 } },
      { message: retried!, record: { outcome: 'retry', status: 503, error: 'HTTP 503', delayMs: 60_000, retryForMs: 3_600_000 } },
      { message: givenUp!, record: { outcome: 'given_up', status: 410, error: 'HTTP 410' } },
      { message: skipped!, record: { outcome: 'skipped', error: 'no webhook endpoint is configured for institute x' } },
      // Another dispatcher claimed it since: this attempt's answer must not count.
      { message: { ...stale!, attempt: stale!.attempt + 1 }, record: { outcome: 'delivered', status: 200 } },
    ]);
    expect(statuses).toEqual(['delivered', 'pending', 'failed', 'skipped', undefined]);

    const rows = await messagesOf('rec-');
    expect(rows.map((m) => [m.batchId, m.status, m.attempts, m.lastStatus, m.lastError])).toEqual([
      ['rec-1', 'delivered', 1, 204, null],
      ['rec-2', 'pending', 1, 503, 'HTTP 503'],
      ['rec-3', 'failed', 1, 410, 'HTTP 410'],
      ['rec-4', 'skipped', 0, null, 'no webhook endpoint is configured for institute x'],
      ['rec-5', 'pending', 1, null, null],
    ]);
    expect(rows[0]!.deliveredAt).toBeInstanceOf(Date);
    // The retry waits its delay from the moment it was recorded (the statement that recorded the delivery too).
    expect(rows[1]!.nextAttemptAt!.getTime() - rows[0]!.deliveredAt!.getTime()).toBe(60_000);
    // The stale one is still held by its claim: nobody else takes it.
    expect((await outbox.claimDueMessages(db(), 10, 60_000)).map((m) => m.batchId).filter((b) => b.startsWith('rec-'))).toEqual([]);
  });

  it('a retry failing at or past WEBHOOK_RETRY_FOR gives the message up; one before it waits no later than the deadline', async () => {
    await syncedBatches('dl-', 2);
    const [first, second] = (await outbox.claimDueMessages(db(), 10, 60_000))
      .filter((m) => m.batchId.startsWith('dl-'))
      .sort((a, b) => a.batchId.localeCompare(b.batchId));
    const statuses = await outbox.recordAttempts(db(), [
      // Retried for 0 ms: the deadline has passed already.
      { message: first!, record: { outcome: 'retry', status: null, error: 'timeout after 5000 ms', delayMs: 1_000, retryForMs: 0 } },
      // The schedule's wait (1 h) ends past the deadline (10 min): the next attempt is on the deadline.
      { message: second!, record: { outcome: 'retry', status: 500, error: 'HTTP 500', delayMs: 3_600_000, retryForMs: 600_000 } },
    ]);
    expect(statuses).toEqual(['failed', 'pending']);
    // Due on the deadline itself: WEBHOOK_RETRY_FOR after the message was written.
    const { rows } = await sqlq(
      `select extract(epoch from next_attempt_at - retry_from) * 1000 as "waitMs" from webhook_messages where batch_id = $1 and status = 'pending'`,
      [second!.batchId],
    );
    expect(rows.map((r) => Number(r.waitMs))).toEqual([600_000]);
  });

  it('a claim released is due again at once with its attempt uncounted; one claimed again since is left alone', async () => {
    await syncedBatches('rel-', 2);
    const [first, second] = (await outbox.claimDueMessages(db(), 10, 60_000))
      .filter((m) => m.batchId.startsWith('rel-'))
      .sort((a, b) => a.batchId.localeCompare(b.batchId));
    await outbox.releaseClaims(db(), [first!, { ...second!, attempt: second!.attempt + 1 }]);
    const again = (await outbox.claimDueMessages(db(), 10, 60_000)).filter((m) => m.batchId.startsWith('rel-'));
    expect(again.map((m) => [m.batchId, m.attempt])).toEqual([['rel-1', 1]]);
  });

  it('closing lets go of the messages it claimed but had not sent; the one being sent keeps its claim', async () => {
    const receiver = await startReceiver();
    receiver.answer = () => 'hang';
    await syncedBatches('close-', 3);
    const delivery = startWebhookDelivery({
      databaseUrl: h.config.databaseUrl,
      settings: { ...h.config.webhooks, endpoint: { url: receiver.url, secrets: [newSecret()] }, concurrency: 1, timeoutMs: 30_000 },
      accounts: [],
      logger: createLogger({ level: 'silent' }),
    });
    try {
      await waitFor(() => receiver.received.length === 1 || undefined, 'the first message sent (its answer never comes)');
      await delivery.close(0);
      const { rows } = await sqlq(
        `select batch_id as "batchId", attempts, locked_until is not null as held from webhook_messages where batch_id like 'close-%' order by batch_id`,
      );
      const sent = receiver.received[0]!.message.data.batchId;
      expect(rows).toEqual(
        rows.map((r: { batchId: string }) =>
          r.batchId === sent ? { batchId: sent, attempts: 1, held: true } : { batchId: r.batchId, attempts: 0, held: false },
        ),
      );
      expect(rows).toHaveLength(3);
    } finally {
      await delivery.close(0);
      await receiver.close();
    }
  });

  it('a backlog of many claims is sent claim after claim without waiting for a poll, each message once', async () => {
    const receiver = await startReceiver();
    await syncedBatches('backlog-', 30);
    // Claims of 4 × 2 messages; a poll only every 10 minutes: only full claims chaining can send all 30.
    const delivery = startWebhookDelivery({
      databaseUrl: h.config.databaseUrl,
      settings: { ...h.config.webhooks, endpoint: { url: receiver.url, secrets: [newSecret()] }, concurrency: 2 },
      accounts: [],
      logger: createLogger({ level: 'silent' }),
      pollMs: 600_000,
    });
    try {
      await waitFor(
        async () => ((await messagesOf('backlog-')).filter((m) => m.status === 'delivered').length === 30 ? true : undefined),
        'all 30 delivered',
        60_000,
      );
      const ids = receiver.received.filter((r) => String(r.message.data.batchId).startsWith('backlog-')).map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(30);
      expect(new Set(ids).size).toBe(30);
    } finally {
      await delivery.close(0);
      await receiver.close();
    }
  });
});

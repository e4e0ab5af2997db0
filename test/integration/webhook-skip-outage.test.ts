// After PostgreSQL was out of reach, a worker without an endpoint is not the first to decide what
// nobody can send: every route went stale during the outage, and the workers with endpoints renew
// theirs only at their next announcement. Until it has reached the outbox for a while
// (src/webhooks/skip-gate.ts), it skips nothing.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';
import { startWebhookDelivery } from '../../src/webhooks/index.ts';
import { type Harness, waitFor } from '../helpers/harness.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { newSecret, startReceiver } from '../helpers/webhook-receiver.ts';

const each = useHarnessPerTest();

const syncedBatch = (h: Harness, institute: string, batch: string) =>
  h.runtime.database.pool.query(
    `insert into batch_classes (institute_id, batch_id, class_name, event, state, class_id, join_link, synced_at)
     values ($1, $2, 'Outage', jsonb_build_object('batchId', $2::text, 'name', 'Outage', 'subject', 'S', 'instituteId', $1::text, 'extra', '{}'::jsonb),
             'synced', 'class-' || $2, 'https://classroom.example/join/' || $2, now())`,
    [institute, batch],
  );
const statusOf = async (h: Harness, batch: string) =>
  (await h.runtime.database.pool.query('select status from webhook_messages where batch_id = $1', [batch])).rows[0]?.status as string | undefined;

describe('skipping after an outage', () => {
  it('a dispatcher back from an outage delivers what it can at once, and skips nothing until the fleet had time to renew its routes', async () => {
    const h = await each.harness();
    const url = new URL(h.config.databaseUrl);
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    each.defer(() => proxy.close());
    url.host = `127.0.0.1:${proxy.port}`;
    const receiver = await startReceiver();
    each.defer(() => receiver.close());
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void warnings.push(JSON.parse(line).msg as string) } });
    // It sends inst-a's messages and nobody sends inst-x's: those are skipped, in the end.
    const delivery = startWebhookDelivery({
      databaseUrl: url.href,
      settings: { ...h.config.webhooks, endpoint: undefined },
      accounts: [{ instituteIds: ['inst-a'], webhook: { url: receiver.url, secrets: [newSecret()] } }],
      logger,
      pollMs: 50,
    });
    each.defer(() => delivery.close(0));
    await syncedBatch(h, 'inst-a', 'before');
    await waitFor(async () => (await statusOf(h, 'before')) === 'delivered' || undefined, 'a message delivered before the outage');

    proxy.cut();
    await waitFor(() => warnings.includes('cannot read the webhook outbox; trying again') || undefined, 'the dispatcher to meet the outage');
    // Written while it cannot see them: one it can send, one nobody can.
    await syncedBatch(h, 'inst-x', 'nobody');
    await syncedBatch(h, 'inst-a', 'during');
    proxy.restore();

    await waitFor(async () => (await statusOf(h, 'during')) === 'delivered' || undefined, 'the message it can send delivered after the outage');
    // The same polls that claimed it did not skip inst-x's: another worker may still be renewing its route.
    expect(await statusOf(h, 'nobody')).toBe('pending');
  });
});

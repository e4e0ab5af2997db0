// A worker prunes audit rows and settled webhook messages past BATCH_EVENTS_RETENTION on a schedule
// of its own: while the sweep fails every time (its Redis is gone), the pruning still happens.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { closeQueues, createSyncQueue } from '../../src/sync/queue.ts';
import { waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h, syncWorker, defer } = useHarness({ env: { SYNC_SWEEP_EVERY: '100ms', SYNC_STUCK_AFTER: '0ms', BATCH_EVENTS_RETENTION: '30d' } });
const sqlq = (text: string, values: unknown[] = []) => h.runtime.database.pool.query(text, values);

describe('housekeeping', () => {
  it('prunes old audit rows and settled webhook messages while every sweep fails', async () => {
    // A batch recorded and never queued (the sweep must reach Redis to queue it), with an audit row
    // and a delivered webhook message from 40 days ago, and a fresh audit row that stays.
    const inst = h.config.classroom.instituteId;
    const { rows } = await sqlq(
      `insert into batch_classes (institute_id, batch_id, class_name, event)
       values ($1, 'old-1', 'Old class', jsonb_build_object('batchId', 'old-1', 'name', 'Old class', 'subject', 'S', 'instituteId', $1::text, 'extra', '{}'::jsonb))
       returning id`,
      [inst],
    );
    const rowId = rows[0].id as string;
    await sqlq(
      `insert into batch_events (batch_row_id, type, at) values ($1, 'received', now() - interval '40 days'), ($1, 'received', now() - interval '1 day')`,
      [rowId],
    );
    await sqlq(
      `insert into webhook_messages (message_id, batch_row_id, institute_id, batch_id, type, occurred_at, data, status)
       values ('msg_old', $1, $2, 'old-1', 'batch.synced', now() - interval '40 days', '{}'::jsonb, 'delivered')`,
      [rowId, inst],
    );

    // The sweep's queue is on a Redis that is not there: every sweep that finds the batch fails.
    const lost = createSyncQueue({ connection: createRedis('redis://127.0.0.1:1', 'probe'), prefix: h.config.queuePrefix, attempts: 3 });
    for (const queue of [lost, lost.background]) queue.on('error', () => {});
    defer(() => closeQueues(lost).catch(() => {}));
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (line: string) => void lines.push(JSON.parse(line).msg) } });
    syncWorker({ ...h.runtime, queue: lost, logger }, { autoSweep: true });

    await waitFor(() => lines.includes('sweep failed; will try again') || undefined, 'a failed sweep');
    await waitFor(async () => {
      const left = await sqlq(
        `select (select count(*)::int from batch_events where batch_row_id = $1) as events, (select count(*)::int from webhook_messages where batch_row_id = $1) as messages`,
        [rowId],
      );
      return left.rows[0].events === 1 && left.rows[0].messages === 0 ? true : undefined;
    }, 'the 40-day-old audit row and webhook message pruned');
    expect(lines.filter((line) => line.startsWith('pruning'))).toEqual([]);
  });
});

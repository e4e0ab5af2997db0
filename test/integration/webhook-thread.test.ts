// A worker's webhook delivery thread that dies is started again, after a backoff, and shows while it
// is down: the metrics, /readyz (degraded, still 200: syncing goes on) and the log. A message written
// while it was down is delivered by the new thread. The backoff runs on a clock the test moves.
import { readFile, readdir } from 'node:fs/promises';
import { platform } from 'node:os';
import { describe, expect, it } from 'vitest';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { outbox } from '../../src/mapping/index.ts';
import { ANNOUNCE_EVERY_MS, ROUTE_FRESH_MS } from '../../src/webhooks/announce.ts';
import { restartDelayMs, startWebhookThread } from '../../src/webhooks/index.ts';
import { DELIVERY_NICE, RESTART_MAX_MS } from '../../src/webhooks/thread.ts';
import { untilSynced } from '../helpers/batches.ts';
import { manualClock } from '../helpers/clock.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessPerTest } from '../helpers/use-harness.ts';
import { newSecret, startReceiver } from '../helpers/webhook-receiver.ts';
import { call, startTestWorker } from './http-helpers.ts';

const each = useHarnessPerTest();

/** The nice value of each of this process's threads (Linux: the 19th field of /proc/self/task/<tid>/stat). */
async function niceValues(): Promise<number[]> {
  const tasks = await readdir('/proc/self/task');
  const stats = await Promise.all(tasks.map((tid) => readFile(`/proc/self/task/${tid}/stat`, 'utf8').catch(() => undefined)));
  return stats.flatMap((stat) => (stat === undefined ? [] : [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])]));
}

/** The value of an unlabelled series on /metrics, or undefined when absent. */
async function series(url: string, name: string): Promise<number | undefined> {
  const line = new RegExp(`^${name} (\\S+)$`, 'm').exec((await call(`${url}/metrics`)).text);
  return line ? Number(line[1]) : undefined;
}

describe('the webhook delivery thread', () => {
  it('killed, is started again after 1 s, then 2 s; down meanwhile on /metrics, /readyz and in the log; a message written meanwhile is delivered', async () => {
    const receiver = await startReceiver();
    each.defer(() => receiver.close());
    const h = await each.harness();
    const clock = manualClock(Date.parse('2026-01-01T00:00:00Z'));
    const lines: { msg: string; [field: string]: unknown }[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
    const worker = await startTestWorker(h, { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: newSecret() }, { logger, deliveryClock: clock });
    each.defer(() => worker.stop());
    const { webhooks, url } = worker;
    await waitFor(() => webhooks.state().status === 'running' || undefined, 'the delivery thread running');
    expect(await series(url, 'classroom_sync_webhook_delivery_up')).toBe(1);
    expect(await series(url, 'classroom_sync_webhook_delivery_restarts_total')).toBe(0);
    expect((await call(`${url}/readyz`)).body).toMatchObject({ status: 'ready', checks: { webhooks: 'ok' } });

    // Killed from outside, as a crash would end it.
    await webhooks.current()!.terminate();
    await waitFor(() => webhooks.state().status === 'restarting' || undefined, 'the thread seen down');
    expect(webhooks.state()).toMatchObject({ restarts: 0, lastExit: 'exited with code 1', nextStartAt: new Date(clock.now() + 1_000) });
    expect(webhooks.current()).toBeUndefined();
    expect(await series(url, 'classroom_sync_webhook_delivery_up')).toBe(0);
    const ready = await call(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'degraded',
      checks: {
        redis: 'ok',
        postgres: 'ok',
        webhooks: 'delivery thread down since 2026-01-01T00:00:00.000Z (exited with code 1); a new one starts at 2026-01-01T00:00:01.000Z',
      },
    });
    const stopped = lines.find((line) => line.msg.startsWith('the webhook delivery thread stopped'));
    expect(stopped).toMatchObject({ level: 50, component: 'webhooks', exit: 'exited with code 1', restartInMs: 1_000 });
    expect(stopped?.msg).toMatch(/starting a new one in 1000 ms\. Until then this worker sends no webhook/);

    // Syncing goes on; the batch's message waits in the outbox while no thread runs.
    await publishBatchCreated(publishDepsOf(h), { batchId: 'while-down', name: 'While down', subject: 'Maths' });
    await untilSynced(h, 'while-down');
    const [waiting] = await outbox.listDeliveries(h.runtime.database.db, { batchId: 'while-down' });
    expect(waiting).toMatchObject({ status: 'pending', attempts: 0 });

    await clock.advance(999);
    expect(webhooks.state().status).toBe('restarting');
    await clock.advance(1);
    await waitFor(() => webhooks.state().status === 'running' || undefined, 'a new thread running');
    expect(webhooks.state().restarts).toBe(1);
    await waitFor(() => receiver.received.find((r) => r.message.data.batchId === 'while-down'), 'the message written while down delivered');
    expect(await series(url, 'classroom_sync_webhook_delivery_up')).toBe(1);
    expect(await series(url, 'classroom_sync_webhook_delivery_restarts_total')).toBe(1);
    expect((await call(`${url}/readyz`)).body).toMatchObject({ status: 'ready', checks: { webhooks: 'ok' } });
    expect(lines.some((line) => line.msg === 'starting the webhook delivery thread again' && line.restarts === 1)).toBe(true);

    // Dead again at once (it had not run a minute): twice the wait.
    await webhooks.current()!.terminate();
    await waitFor(() => webhooks.state().status === 'restarting' || undefined, 'the second thread seen down');
    expect(webhooks.state().nextStartAt).toEqual(new Date(clock.now() + 2_000));
    await clock.advance(2_000);
    await waitFor(() => webhooks.state().status === 'running' || undefined, 'a third thread running');
    expect(await series(url, 'classroom_sync_webhook_delivery_restarts_total')).toBe(2);

    // One that ran a minute was healthy: the next restart waits 1 s again.
    await clock.advance(60_000);
    await webhooks.current()!.terminate();
    await waitFor(() => webhooks.state().status === 'restarting' || undefined, 'the third thread seen down');
    expect(webhooks.state().nextStartAt).toEqual(new Date(clock.now() + 1_000));
  });

  it('waits 1 s, 2 s, 4 s … up to 30 s between threads that die young: under the minute a route stays fresh', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 20].map(restartDelayMs)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
    expect(RESTART_MAX_MS).toBeLessThan(ROUTE_FRESH_MS - ANNOUNCE_EVERY_MS);
  });

  // Loaded at normal priority, then lowered: loading at the lowest one took over 30 s on a saturated machine.
  it.runIf(platform() === 'linux')('runs at the lowest priority (nice 19) once started, beside the threads it leaves at theirs', async () => {
    const before = await niceValues();
    const h = await each.harness();
    const worker = await startTestWorker(h, { WEBHOOK_URL: 'http://127.0.0.1:9/hooks', WEBHOOK_SECRET: newSecret() });
    each.defer(() => worker.stop());
    await waitFor(async () => (await niceValues()).filter((n) => n === DELIVERY_NICE).length === 1 || undefined, 'one thread at nice 19');
    expect(before.filter((n) => n === DELIVERY_NICE)).toEqual([]);
    expect(worker.webhooks.state().status).toBe('running');
  });

  it('closed while waiting to start again, starts none', async () => {
    const h = await each.harness();
    const clock = manualClock();
    const states: string[] = [];
    const thread = startWebhookThread(
      { databaseUrl: h.config.databaseUrl, settings: h.config.webhooks, accounts: [], logger: createLogger({ level: 'silent' }) },
      { clock, onState: (state) => states.push(state.status) },
    );
    await waitFor(() => thread.state().status === 'running' || undefined, 'the delivery thread running');
    await thread.current()!.terminate();
    await waitFor(() => thread.state().status === 'restarting' || undefined, 'the thread seen down');
    await thread.close(1_000);
    await clock.advance(60_000);
    expect(thread.state().status).toBe('stopped');
    expect(thread.current()).toBeUndefined();
    expect(states).toEqual(['starting', 'running', 'restarting', 'stopped']);
  });
});

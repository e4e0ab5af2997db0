// Delivery on a worker thread of its own. Signing, posting and recording a message cost about a
// millisecond of an event loop; on the worker's main thread that millisecond was taken from the sync
// jobs (bench/webhooks.ts: sync throughput fell 10–15 % with webhooks on). On its own thread it never
// delays a sync job's turn, and it runs on a core the main thread leaves idle.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logging/logger.ts';
import { within } from '../support/timeout.ts';
import type { WebhookDelivery, WebhookDeliveryDeps } from './delivery.ts';
import type { ThreadData, ThreadReport, ThreadRequest } from './thread-protocol.ts';

/**
 * Delivery is background work beside the sync: on Linux its thread runs at the lowest priority, so
 * on a busy machine the sync jobs get the CPU first and deliveries take what is left. It still runs
 * whenever a core is idle, and gets a small share when none is: a machine kept saturated for long
 * delays messages (ClassroomSyncWebhooksBacklog says so), it never stops them.
 */
export const DELIVERY_NICE = 19;

/** Past the grace it gave the dispatcher, how long `close` waits for the thread's last report. */
const CLOSE_MARGIN_MS = 2_000;

export function startWebhookThread(deps: WebhookDeliveryDeps): WebhookDelivery {
  const { logger } = deps;
  const data: ThreadData = {
    entry: new URL(`./thread-main${extname(fileURLToPath(import.meta.url))}`, import.meta.url).href,
    databaseUrl: deps.databaseUrl,
    settings: deps.settings,
    // Only what routing needs crosses over: an account's API key stays in this thread.
    accounts: deps.accounts.map(({ instituteIds, anyInstitute, webhook }) => ({ instituteIds, anyInstitute, webhook })),
    logLevel: logger.level,
    pollMs: deps.pollMs,
    nice: DELIVERY_NICE,
  };
  const thread = new Worker(new URL('./thread-boot.mjs', import.meta.url), { workerData: data, name: 'classroom-sync-webhooks' });
  let closing: Promise<void> | undefined;
  const reported = new Promise<void>((resolve) => {
    thread.on('message', (report: ThreadReport) => {
      if (report.kind === 'log') relog(logger, report.line);
      else if (report.kind === 'outcomes') for (const { outcome, type, n } of report.counts) for (let i = 0; i < n; i += 1) deps.onOutcome?.(outcome, type);
      else resolve();
    });
    thread.once('exit', () => resolve());
  });
  thread.on('error', (error) =>
    logger.error(
      { err: error, component: 'webhooks' },
      'the webhook delivery thread stopped; this worker sends no webhook until it is restarted (messages wait in the outbox, other workers still send them)',
    ),
  );
  const send = (request: ThreadRequest) => thread.postMessage(request);
  return {
    nudge: () => send({ kind: 'nudge' }),
    close(graceMs) {
      closing ??= (async () => {
        send({ kind: 'close', graceMs });
        await within(reported, graceMs + CLOSE_MARGIN_MS);
        await thread.terminate();
      })();
      return closing;
    },
  };
}

/** A line the thread logged (already censored there), written again by this thread's logger. */
function relog(logger: Logger, line: string): void {
  const { level, msg, time: _time, service: _service, ...fields } = JSON.parse(line) as Record<string, unknown>;
  const label = logger.levels.labels[Number(level)] ?? 'info';
  (logger[label as 'info'] ?? logger.info).call(logger, fields, String(msg ?? ''));
}

// Inside the delivery thread: runs the dispatcher and reports to the worker's main thread, which
// owns the logger's destination and the metrics. Outcomes are counted here and sent in batches.
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../logging/logger.ts';
import type { DeliveryOutcome } from './dispatcher.ts';
import { startWebhookDelivery } from './delivery.ts';
import type { ThreadData, ThreadReport, ThreadRequest } from './thread-protocol.ts';

const port = parentPort;
if (!port) throw new Error('src/webhooks/thread-main.ts runs only as a worker thread (see src/webhooks/thread.ts)');

const data = workerData as ThreadData;
// Censored here as everywhere; the main thread writes the lines through its own logger.
const logger = createLogger({ level: data.logLevel, destination: { write: (line: string) => port.postMessage({ kind: 'log', line } satisfies ThreadReport) } });

/** How often counted outcomes are sent to the main thread. */
const REPORT_EVERY_MS = 100;
let counts = new Map<string, { outcome: DeliveryOutcome; type: string; n: number }>();
const report = () => {
  if (counts.size === 0) return;
  port.postMessage({ kind: 'outcomes', counts: [...counts.values()] } satisfies ThreadReport);
  counts = new Map();
};
const reporting = setInterval(report, REPORT_EVERY_MS);

const delivery = startWebhookDelivery({
  databaseUrl: data.databaseUrl,
  settings: data.settings,
  accounts: data.accounts,
  logger,
  ...(data.pollMs === undefined ? {} : { pollMs: data.pollMs }),
  dispatcherId: data.dispatcherId,
  onOutcome: (outcome, type) => {
    const key = `${outcome} ${type}`;
    const entry = counts.get(key) ?? { outcome, type, n: 0 };
    entry.n += 1;
    counts.set(key, entry);
  },
});

port.postMessage({ kind: 'running' } satisfies ThreadReport);

port.on('message', (request: ThreadRequest) => {
  if (request.kind === 'nudge') return delivery.nudge();
  void delivery.close(request.graceMs).finally(() => {
    clearInterval(reporting);
    report();
    port.postMessage({ kind: 'closed' } satisfies ThreadReport);
    port.close();
  });
});

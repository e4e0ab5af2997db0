// One delivery thread: starts it, relays what it reports (log lines, counted outcomes, that it runs)
// and says how it ended. ./thread.ts keeps one running, starting a new one when one ends.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logging/logger.ts';
import { within } from '../support/timeout.ts';
import type { DeliveryOutcome } from './dispatcher.ts';
import type { ThreadData, ThreadReport, ThreadRequest } from './thread-protocol.ts';

export interface SpawnDeps {
  data: ThreadData;
  logger: Logger;
  onOutcome?: ((outcome: DeliveryOutcome, type: string) => void) | undefined;
  /** The dispatcher in the thread runs. */
  onRunning: () => void;
  /** The thread ended: `how` in our own words ("exited with code 1"), `error` if it threw one. */
  onEnd: (how: string, error: unknown) => void;
}

export interface DeliveryThread {
  readonly worker: Worker;
  send(request: ThreadRequest): void;
  /** Asks the thread to close within `graceMs`, waits for it a little longer, then ends it. */
  close(graceMs: number): Promise<void>;
}

/** Past the grace it gave the dispatcher, how long `close` waits for the thread's last report. */
const CLOSE_MARGIN_MS = 2_000;

export function spawnDeliveryThread(deps: SpawnDeps): DeliveryThread {
  const { logger } = deps;
  const worker = new Worker(new URL('./thread-boot.mjs', import.meta.url), { workerData: deps.data, name: 'classroom-sync-webhooks' });
  let thrown: unknown;
  const reported = new Promise<void>((resolve) => {
    worker.on('message', (report: ThreadReport) => {
      if (report.kind === 'log') relog(logger, report.line);
      else if (report.kind === 'outcomes') for (const { outcome, type, n } of report.counts) for (let i = 0; i < n; i += 1) deps.onOutcome?.(outcome, type);
      else if (report.kind === 'running') deps.onRunning();
      else resolve();
    });
    worker.once('exit', () => resolve());
  });
  // An uncaught error ends the thread: 'error' comes first, then 'exit' (as does terminate()'s, alone).
  worker.on('error', (error) => {
    thrown = error;
  });
  worker.once('exit', (code) => deps.onEnd(thrown === undefined ? `exited with code ${code}` : `crashed (${nameOf(thrown)})`, thrown));
  const send = (request: ThreadRequest) => worker.postMessage(request);
  return {
    worker,
    send,
    async close(graceMs) {
      send({ kind: 'close', graceMs });
      await within(reported, graceMs + CLOSE_MARGIN_MS);
      await worker.terminate();
    },
  };
}

function nameOf(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/** A line the thread logged (already censored there), written again by this thread's logger. */
function relog(logger: Logger, line: string): void {
  const { level, msg, time: _time, service: _service, ...fields } = JSON.parse(line) as Record<string, unknown>;
  const label = logger.levels.labels[Number(level)] ?? 'info';
  (logger[label as 'info'] ?? logger.info).call(logger, fields, String(msg ?? ''));
}

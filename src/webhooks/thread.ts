// Delivery on a worker thread of its own. Signing, posting and recording a message cost about a
// millisecond of an event loop; on the worker's main thread that millisecond was taken from the sync
// jobs (bench/webhooks.ts: sync throughput fell 10–15 % with webhooks on). On its own thread it never
// delays a sync job's turn, and it runs on a core the main thread leaves idle.
//
// A thread that ends unless asked to (an uncaught error, terminated from outside) is started again
// after a backoff, and its state is told (`onState`: the metrics) and can be asked (`state()`: /readyz).
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { type Clock, systemClock } from '../support/clock.ts';
import type { WebhookDelivery, WebhookDeliveryDeps } from './delivery.ts';
import type { ThreadData } from './thread-protocol.ts';
import { type DeliveryThread, spawnDeliveryThread } from './thread-spawn.ts';

/**
 * Delivery is background work beside the sync: on Linux its thread runs at the lowest priority, so
 * on a busy machine the sync jobs get the CPU first and deliveries take what is left. It still runs
 * whenever a core is idle, and gets a small share when none is: a machine kept saturated for long
 * delays messages (ClassroomSyncWebhooksBacklog says so), it never stops them.
 */
export const DELIVERY_NICE = 19;

/** The first restart waits this long; each one after a thread that died young waits twice the last. */
export const RESTART_FIRST_MS = 1_000;
/**
 * Under ROUTE_FRESH_MS (./announce.ts), with room for a start: a thread that keeps dying keeps its
 * route fresh (each new thread renews it at start), so peers without an endpoint never skip what
 * this worker sends between deaths.
 */
export const RESTART_MAX_MS = 30_000;
/** A thread that ran this long was healthy: if it dies, the next one starts after RESTART_FIRST_MS again. */
export const HEALTHY_AFTER_MS = 60_000;

/**
 * starting    a thread was started and its dispatcher does not run yet
 * running     the dispatcher runs: this worker delivers
 * restarting  the thread ended unasked; a new one starts at `nextStartAt`
 * stopped     closed on purpose
 */
export type DeliveryThreadStatus = 'starting' | 'running' | 'restarting' | 'stopped';

export interface DeliveryThreadState {
  status: DeliveryThreadStatus;
  /** Threads started again after one ended unasked, since the process started. */
  restarts: number;
  /** When it entered this status. */
  since: Date;
  /** How the last thread that ended unasked ended ("exited with code 1"); its error is in the log. */
  lastExit?: string;
  /** restarting: when the next thread starts. */
  nextStartAt?: Date;
}

export interface WebhookThread extends WebhookDelivery {
  state(): DeliveryThreadState;
  /** The thread running now (none while restarting or stopped): tests terminate it to see it come back. */
  current(): Worker | undefined;
}

export interface WebhookThreadOptions {
  /** Times the restarts (a test's); default the system clock, which `since` and `nextStartAt` are read from. */
  clock?: Clock;
  /** Told of every change of state, the first included (metrics). Must not throw. */
  onState?: (state: DeliveryThreadState) => void;
}

/** How long the restart after `failures` threads in a row that died young waits: 1 s, 2 s, 4 s … 30 s (RESTART_MAX_MS). */
export function restartDelayMs(failures: number): number {
  return Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** failures);
}

export function startWebhookThread(deps: WebhookDeliveryDeps, options: WebhookThreadOptions = {}): WebhookThread {
  const clock = options.clock ?? systemClock;
  const logger = deps.logger.child({ component: 'webhooks' });
  const data = threadData(deps);
  const states = stateKeeper(clock, options.onState);
  const backoff = restartBackoff(clock);
  let thread: DeliveryThread | undefined;
  let closing: Promise<void> | undefined;
  let cancelRestart = () => {};

  const ended = (startedAt: number, how: string, error: unknown) => {
    thread = undefined;
    if (closing) return;
    const delayMs = backoff(startedAt);
    const { restarts } = states.get();
    logger.error(
      { err: error, exit: how, restartInMs: delayMs, restarts },
      `the webhook delivery thread stopped (${how}); starting a new one in ${delayMs} ms. Until then this worker sends no webhook: messages wait in the outbox, and other workers still send them`,
    );
    states.moveTo('restarting', { lastExit: how, nextStartAt: new Date(clock.now() + delayMs) });
    cancelRestart = clock.after(delayMs, () => {
      if (closing) return;
      states.moveTo('starting', { restarts: restarts + 1 });
      logger.info({ restarts: restarts + 1 }, 'starting the webhook delivery thread again');
      start();
    });
  };

  const start = () => {
    const startedAt = clock.now();
    try {
      thread = spawnDeliveryThread({
        data,
        logger: deps.logger,
        onOutcome: deps.onOutcome,
        onRunning: () => states.moveTo('running'),
        onEnd: (how, error) => ended(startedAt, how, error),
      });
    } catch (error) {
      ended(startedAt, `could not start (${error instanceof Error ? error.name : typeof error})`, error);
    }
  };

  start();
  return {
    nudge: () => thread?.send({ kind: 'nudge' }),
    state: states.get,
    current: () => thread?.worker,
    close: (graceMs) =>
      (closing ??= (async () => {
        cancelRestart();
        await thread?.close(graceMs);
        states.moveTo('stopped');
      })()),
  };
}

/** The thread's state, starting at `starting`; every change (the first included) is told to `onState`. */
function stateKeeper(clock: Clock, onState: WebhookThreadOptions['onState']) {
  let state: DeliveryThreadState = { status: 'starting', restarts: 0, since: new Date(clock.now()) };
  onState?.(state);
  return {
    get: () => state,
    /** Keeps the restart count and the last exit unless `more` says otherwise; drops `nextStartAt`. */
    moveTo(status: DeliveryThreadStatus, more: Partial<DeliveryThreadState> = {}) {
      const { lastExit, restarts } = state;
      state = { status, restarts, since: new Date(clock.now()), ...(lastExit ? { lastExit } : {}), ...more };
      onState?.(state);
    },
  };
}

/** The wait before the next start: 1 s after a thread that ran HEALTHY_AFTER_MS, else twice the last, up to 30 s. */
function restartBackoff(clock: Clock): (startedAt: number) => number {
  /** Threads in a row that died before HEALTHY_AFTER_MS. */
  let failures = 0;
  return (startedAt) => {
    if (clock.now() - startedAt >= HEALTHY_AFTER_MS) failures = 0;
    failures += 1;
    return restartDelayMs(failures - 1);
  };
}

function threadData(deps: WebhookDeliveryDeps): ThreadData {
  return {
    entry: new URL(`./thread-main${extname(fileURLToPath(import.meta.url))}`, import.meta.url).href,
    databaseUrl: deps.databaseUrl,
    settings: deps.settings,
    // Only what routing needs crosses over: an account's API key stays in this thread.
    accounts: deps.accounts.map(({ instituteIds, anyInstitute, webhook }) => ({ instituteIds, anyInstitute, webhook })),
    logLevel: deps.logger.level,
    pollMs: deps.pollMs,
    dispatcherId: deps.dispatcherId,
    nice: DELIVERY_NICE,
  };
}

// Delivers the outbox: claims due messages from PostgreSQL, posts each with its own connections and
// concurrency, and records how each attempt ended. Off the sync path entirely: a down endpoint holds
// no memory (pending messages stay in the table) and takes no sync job's slot or connection.
import { outbox } from '../mapping/index.ts';
import { within } from '../timeout.ts';
import { type DeliverDeps, createDeliver } from './deliver.ts';

export type { DeliveryOutcome } from './deliver.ts';

export interface DispatcherDeps extends DeliverDeps {
  /** The institutes with an endpoint (undefined: all); others' messages are skipped in bulk. */
  routed?: readonly string[] | undefined;
  /** How often to look for due messages when nothing woke it sooner (default 1 s). */
  pollMs?: number;
}

export interface Dispatcher {
  /** Looks for due messages now (a state change was just written). */
  nudge(): void;
  /** Stops claiming; waits up to `graceMs` for attempts in flight (an unfinished one is retried later). */
  close(graceMs: number): Promise<void>;
}

/**
 * A claim lasts twice the request's timeout and this much more: time to record the answer. Past
 * it, another dispatcher may take the message (a dead one's are sent again that soon).
 */
const HOLD_MARGIN_MS = 5_000;

export function startDispatcher(deps: DispatcherDeps): Dispatcher {
  const { settings, logger } = deps;
  const pollMs = deps.pollMs ?? 1_000;
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let wake: (() => void) | undefined;
  const nudge = () => wake?.();

  const deliver = createDeliver(deps);

  const track = (message: outbox.ClaimedMessage) => {
    const attempt = deliver(message)
      .catch((error: unknown) =>
        logger.warn({ err: error, messageId: message.messageId }, 'could not record a webhook attempt; tried again once its claim ends'),
      )
      .finally(() => {
        inFlight.delete(attempt);
        nudge();
      });
    inFlight.add(attempt);
  };

  const loop = async () => {
    let failures = 0;
    while (!stopped) {
      const free = settings.concurrency - inFlight.size;
      let claimed: outbox.ClaimedMessage[] = [];
      if (free > 0) {
        try {
          if (deps.routed) for (const type of await outbox.skipUnrouted(deps.db, deps.routed)) deps.onOutcome?.('skipped', type);
          claimed = await outbox.claimDueMessages(deps.db, free, 2 * settings.timeoutMs + HOLD_MARGIN_MS);
          failures = 0;
        } catch (error) {
          failures += 1;
          if (failures === 1) logger.warn({ err: error }, 'cannot read the webhook outbox; trying again');
        }
        for (const message of claimed) track(message);
      }
      // A full claim may mean more is due: look again as soon as a slot is free.
      if (claimed.length > 0 && claimed.length === free) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, failures > 0 ? Math.min(pollMs * 2 ** failures, 30_000) : pollMs);
        wake = () => resolve(clearTimeout(timer));
      });
      wake = undefined;
    }
  };
  const running = loop();

  return {
    nudge,
    async close(graceMs) {
      stopped = true;
      nudge();
      await running;
      await within(Promise.allSettled([...inFlight]), graceMs);
    },
  };
}

// Delivers the outbox: claims due messages from PostgreSQL, posts each with its own connections and
// concurrency, and records how each attempt ended. Off the sync path entirely: a down endpoint holds
// no memory (pending messages stay in the table) and takes no sync job's slot or connection.
import { outbox } from '../mapping/index.ts';
import { ROUTE_FRESH_MS, startAnnouncing } from './announce.ts';
import { type DeliverDeps, createDeliver } from './deliver.ts';
import { createSkipGate } from './skip-gate.ts';
import { createSlots } from './slots.ts';
import { systemClock } from '../support/clock.ts';

export type { DeliveryOutcome } from './deliver.ts';

export interface DispatcherDeps extends DeliverDeps {
  /**
   * The institutes with an endpoint (undefined: all): the only ones it claims. Others' messages are
   * skipped in bulk, unless another dispatcher of the fleet can send them (./announce.ts).
   */
  routed?: readonly string[] | undefined;
  /** Names it in webhook_routes (default: host, process and a random part). A worker's id survives its thread's restarts. */
  dispatcherId?: string | undefined;
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
 * A claim lasts twice the request's timeout and this much more: a message may wait one timeout for a
 * slot (./slots.ts), its attempt one more, and this is time to record the answer. Past it, another
 * dispatcher may take the message (a dead one's are sent again that soon).
 */
const HOLD_MARGIN_MS = 5_000;
/** A claim brings up to this many times WEBHOOK_CONCURRENCY messages: fewer, larger statements. */
const PREFETCH = 4;

export function startDispatcher(deps: DispatcherDeps): Dispatcher {
  const { settings, logger } = deps;
  const pollMs = deps.pollMs ?? 1_000;
  const capacity = settings.concurrency * PREFETCH;
  let stopped = false;
  /** The last claim was full: more may be due than it could take. */
  let moreDue = false;
  let wake: (() => void) | undefined;
  const nudge = () => wake?.();
  const slots = createSlots({
    deliver: createDeliver(deps),
    release: (messages) => outbox.releaseClaims(deps.db, messages),
    logger,
    concurrency: settings.concurrency,
    maxWaitMs: settings.timeoutMs,
    // Claim again once a slot-load of room is free, if the last claim left messages behind: several messages a claim, not
    // one an attempt. Messages written since a claim that took all that was due wait for the next poll (a trickle goes by polls).
    onFree: () => moreDue && capacity - slots.held() >= settings.concurrency && nudge(),
  });
  const claim = dueMessages(deps, pollMs);
  const announcer = startAnnouncing(deps); // so that workers without an endpoint leave those messages to it

  const running = (async () => {
    let failures = 0;
    while (!stopped) {
      const room = capacity - slots.held();
      let claimed: outbox.ClaimedMessage[] = [];
      if (room > 0) {
        const claimedAt = Date.now();
        try {
          claimed = await claim(room);
          failures = 0;
        } catch (error) {
          failures += 1;
          if (failures === 1) logger.warn({ err: error }, 'cannot read the webhook outbox; trying again');
        }
        slots.take(claimed, claimedAt);
      }
      // A full claim may mean more is due: look again at once. With no room, the claim that filled
      // the slots was full, so more still may be (moreDue stays): a slot freeing wakes the pause.
      if (room > 0) moreDue = claimed.length === room;
      if (room > 0 && moreDue) continue;
      await pause(failures > 0 ? Math.min(pollMs * 2 ** failures, 30_000) : pollMs, (early) => {
        wake = early;
      });
      wake = undefined;
    }
  })();

  return {
    nudge,
    async close(graceMs) {
      stopped = true;
      nudge();
      await running;
      await announcer?.stop();
      await slots.drain(graceMs);
    },
  };
}

/**
 * Claims up to `free` due messages of the institutes it has an endpoint for. Once a poll, due
 * messages that no dispatcher of the fleet can send are first recorded skipped in bulk.
 */
function dueMessages(deps: DispatcherDeps, pollMs: number): (free: number) => Promise<outbox.ClaimedMessage[]> {
  const { routed } = deps;
  const gate = createSkipGate(systemClock);
  let skippedAt = Number.NEGATIVE_INFINITY;
  const skipOrClaim = async (free: number) => {
    if (routed && gate.open() && Date.now() - skippedAt >= pollMs) {
      skippedAt = Date.now();
      for (const type of await outbox.skipUnrouted(deps.db, routed, ROUTE_FRESH_MS)) deps.onOutcome?.('skipped', type);
    }
    if (routed?.length === 0) return [];
    return outbox.claimDueMessages(deps.db, free, 2 * deps.settings.timeoutMs + HOLD_MARGIN_MS, routed);
  };
  return async (free) => {
    try {
      const claimed = await skipOrClaim(free);
      gate.reached();
      return claimed;
    } catch (error) {
      gate.failed();
      throw error;
    }
  };
}

/** Waits `ms`, or less if the function handed to `onWake` is called first. */
function pause(ms: number, onWake: (wake: () => void) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    onWake(() => resolve(clearTimeout(timer)));
  });
}

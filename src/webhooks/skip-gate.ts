// When a dispatcher may record messages `skipped` for want of an endpoint anywhere in the fleet. The
// skip reads webhook_routes, which each dispatcher with an endpoint renews every ANNOUNCE_EVERY_MS.
// After an outage of PostgreSQL longer than ROUTE_FRESH_MS, every route is stale until its
// dispatcher's next renewal: a dispatcher that came back first would skip what the others can send.
// So after any failure to reach the outbox, it skips nothing until it has reached it for a while:
// long enough for every live dispatcher to have renewed its route.
import type { Clock } from '../support/clock.ts';
import { ANNOUNCE_EVERY_MS } from './announce.ts';

/** How long a dispatcher must reach PostgreSQL again, after a failure, before it skips anything. */
export const SKIP_AFTER_RECOVERY_MS = 2 * ANNOUNCE_EVERY_MS;

export interface SkipGate {
  /** The outbox answered. */
  reached(): void;
  /** The outbox could not be reached. */
  failed(): void;
  /** Whether skipping is safe now. */
  open(): boolean;
}

/** Open from the start (a new dispatcher saw no outage); closed from a failure until SKIP_AFTER_RECOVERY_MS of answers. */
export function createSkipGate(clock: Pick<Clock, 'now'>): SkipGate {
  let reachedSince: number | undefined = Number.NEGATIVE_INFINITY;
  return {
    reached: () => {
      reachedSince ??= clock.now();
    },
    failed: () => {
      reachedSince = undefined;
    },
    open: () => reachedSince !== undefined && clock.now() - reachedSince >= SKIP_AFTER_RECOVERY_MS,
  };
}

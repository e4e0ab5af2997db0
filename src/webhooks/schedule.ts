// When a failed message is tried again: the Standard Webhooks schedule (or WEBHOOK_RETRY_SCHEDULE),
// with jitter, so a fleet's messages to an endpoint that was down do not all come back at once.
import { type Clock, systemClock } from '../support/clock.ts';

const JITTER = 0.2;
/** A Retry-After is honoured up to this (an endpoint cannot park a message for longer). */
const MAX_RETRY_AFTER_MS = 10 * 3_600_000;

/**
 * The wait after the `attempt`-th failed attempt (1 for the first): the schedule's entry, the last
 * one repeating, ±10% jitter; at least the endpoint's Retry-After when it sent one.
 */
export function retryDelayMs(schedule: readonly number[], attempt: number, retryAfterMs?: number, random: () => number = Math.random): number {
  const base = schedule[Math.min(Math.max(attempt, 1), schedule.length) - 1] ?? 0;
  const jittered = Math.round(base * (1 - JITTER / 2 + JITTER * random()));
  return retryAfterMs === undefined ? jittered : Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** A Retry-After header (seconds, or an HTTP date) as milliseconds from now by `clock` (epoch ms). */
export function parseRetryAfter(header: string | undefined, clock: Pick<Clock, 'now'> = systemClock): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1_000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - clock.now());
}

// Why the rate limiter gave no slot. Each means the call was not sent; the remote client turns it
// into a `not_sent` failure with a reason of its own (src/classroom/call.ts), or, for the breaker,
// into the credentials refusal it stands for.
import type { QueueLane } from '../mapping/index.ts';

/** Base class: the limiter refused a slot, and nothing was sent. */
export abstract class RateLimitError extends Error {}

/** The budget is full: a live or under-way call's next slot is further away than the limiter's longest wait. */
export class RateLimitWaitTooLongError extends RateLimitError {
  override readonly name = 'RateLimitWaitTooLongError';
}

/** No slot while the API key is known to be refused (see breaker.ts). */
export class BreakerOpenError extends RateLimitError {
  override readonly name = 'BreakerOpenError';
}

/** A lower lane's call found no slot near enough: ask again in `retryInMs` (nothing was reserved). */
export class LaneDeferredError extends RateLimitError {
  override readonly name = 'LaneDeferredError';
  constructor(
    readonly lane: QueueLane,
    readonly retryInMs: number,
  ) {
    super(`the ${lane} lane waits for a free rate-limit slot; asking again in ${retryInMs} ms`);
  }
}

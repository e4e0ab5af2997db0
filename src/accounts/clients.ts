// The one factory of classroom clients: what a client's calls go through (a slot of the account's
// budget, its breaker, the observers) follows from what the client is for, written once here, so no
// builder can leave a hook out by accident.
import { type CallRecord, type ClassroomClient, createClassroomClient } from '../classroom/client.ts';
import { CredentialsRefusedError } from '../classroom/errors.ts';
import type { ClassroomSettings } from '../classroom/settings.ts';
import { type CredentialsBreaker, describeBreaker } from '../ratelimit/breaker.ts';
import { BreakerOpenError, type RateLimiter, latestSendMs } from '../ratelimit/limiter.ts';

/** A batch's (or a reconciliation pass's) calls: each takes a slot of the account's budget and is observed. */
export interface MeteredUse {
  kind: 'metered';
  /** The account's name, in the refusal a closed breaker throws. */
  account: string;
  limiter: RateLimiter;
  /** Read only to say why a call was not sent while it is open. */
  breaker: CredentialsBreaker;
  /** Told about every finished call (a refused key, metrics). Must not throw. */
  afterCall: (call: CallRecord) => void;
}

/**
 * No slot and no observers: the credentials probe, which must pass the open breaker (it asks whether
 * the key works again), and `classroom-sync check`'s one read, made outside any running fleet.
 */
export interface UnmeteredUse {
  kind: 'unmetered';
}

export type ClientUse = MeteredUse | UnmeteredUse;

export const UNMETERED: UnmeteredUse = { kind: 'unmetered' };

export function createRemoteClient(settings: ClassroomSettings, use: ClientUse): ClassroomClient {
  if (use.kind === 'unmetered') return createClassroomClient(settings);
  const { account, limiter, breaker, afterCall } = use;
  return createClassroomClient(settings, {
    latestSendMs: latestSendMs(settings.rateLimitWindowMs),
    beforeCall: async (operation, lane) => {
      try {
        // The limiter and this client both read the monotonic clock: the slot's due time carries over.
        return (await limiter.acquire(lane)).dueAt;
      } catch (error) {
        if (!(error instanceof BreakerOpenError)) throw error;
        const state = await breaker.state();
        const why = state ? describeBreaker(state) : 'credentials refused';
        throw new CredentialsRefusedError(`${operation} not sent: ${why} (account ${account}); waiting for the key to work again`, {
          operation,
          reason: 'breaker_open',
          sent: false,
        });
      }
    },
    afterCall,
  });
}

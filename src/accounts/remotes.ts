// Everything that exists once per account: its classroom client, its share of the remote's rate
// limit (one budget per API key, shared by every process through Redis) and its credentials
// breaker (a refused key stops that account only). A batch reaches the remote through the account
// serving its institute, and through no other.
import type { CallRecord, ClassroomClient } from '../classroom/client.ts';
import type { Logger } from '../logging/logger.ts';
import { type CredentialsBreaker, createCredentialsBreaker } from '../ratelimit/breaker.ts';
import { breakerKey, budgetKey } from '../ratelimit/keys.ts';
import type { QueueLane } from '../mapping/index.ts';
import { type RateLimiter, createRateLimiter } from '../ratelimit/limiter.ts';
import type { Redis } from '../redis/connection.ts';
import { createRemoteClient } from './clients.ts';
import type { Account } from './types.ts';

export interface Remote {
  readonly account: Account;
  readonly classroom: ClassroomClient;
  readonly limiter: RateLimiter;
  readonly breaker: CredentialsBreaker;
}

export interface Remotes {
  /** The default account's (batches sent without an institute go to it). */
  readonly default: Remote;
  /** In the order the accounts were configured. */
  readonly all: readonly Remote[];
  /** The remote of the account serving `instituteId`; undefined when no account serves it. */
  forInstitute(instituteId: string): Remote | undefined;
}

/** Observers of every account's calls and rate-limit slots (metrics); each is told the account's name. */
export interface RemoteObservers {
  afterCall?: (call: CallRecord, account: string) => void;
  onRateLimitWait?: (ms: number, account: string) => void;
  /** `retake`: a fresh slot for a call that overslept its own (see ratelimit/limiter.ts). */
  onRateLimitReserve?: (lane: QueueLane, account: string, retake: boolean) => void;
}

export interface RemotesDeps {
  accounts: readonly Account[];
  defaultAccount: string;
  queuePrefix: string;
  redis: Redis;
  logger: Logger;
  observers?: RemoteObservers;
  /** Opens a breaker after a refused call (the runtime's, so it logs once for the fleet). */
  onRefused: (breaker: CredentialsBreaker, call: CallRecord, account: string) => void;
}

export function createRemotes(deps: RemotesDeps): Remotes {
  const all = deps.accounts.map((account) => createRemote(account, deps));
  const byInstitute = new Map<string, Remote>();
  for (const remote of all) for (const instituteId of remote.account.instituteIds) byInstitute.set(instituteId, remote);
  const fallback = all.find((remote) => remote.account.name === deps.defaultAccount) ?? all[0];
  if (!fallback) throw new Error('no accounts configured');
  const anyInstitute = all.find((remote) => remote.account.anyInstitute);
  return { default: fallback, all, forInstitute: (instituteId) => byInstitute.get(instituteId) ?? anyInstitute };
}

/**
 * With several accounts, a live job waits in place for at most about two of its own account's
 * slots: a busy account's backlog then holds few worker slots, and a quiet account's batches find one.
 */
export const sharedLiveHorizonMs = (callsPerMinute: number): number => Math.max(2 * (60_000 / callsPerMinute), 250);

function createRemote(account: Account, deps: RemotesDeps): Remote {
  const { name } = account;
  const keys = { queuePrefix: deps.queuePrefix, classroom: account.classroom };
  const breaker = createCredentialsBreaker(deps.redis, breakerKey(keys));
  const { onRateLimitWait, onRateLimitReserve, afterCall } = deps.observers ?? {};
  const limiter = createRateLimiter({
    redis: deps.redis,
    key: budgetKey(keys),
    breakerKey: breaker.key,
    callsPerMinute: account.classroom.rateLimitPerMinute,
    windowMs: account.classroom.rateLimitWindowMs,
    ...(deps.accounts.length > 1 ? { liveHorizonMs: sharedLiveHorizonMs(account.classroom.rateLimitPerMinute) } : {}),
    ...(onRateLimitWait ? { onWait: (ms: number) => onRateLimitWait(ms, name) } : {}),
    ...(onRateLimitReserve ? { onReserve: (lane: QueueLane, retake: boolean) => onRateLimitReserve(lane, name, retake) } : {}),
  });
  const classroom = createRemoteClient(account.classroom, {
    kind: 'metered',
    account: name,
    limiter,
    breaker,
    afterCall: (call) => {
      // A 401 is about the key, whoever made the call: every process stops using this account.
      if (call.outcome === 'credentials_refused') deps.onRefused(breaker, call, name);
      afterCall?.(call, name);
    },
  });
  return { account, classroom, limiter, breaker };
}

/** Each account's breaker, named: what status, readiness and metrics read. */
export function breakersOf(remotes: Pick<Remotes, 'all'>): { account: string; breaker: CredentialsBreaker }[] {
  return remotes.all.map((remote) => ({ account: remote.account.name, breaker: remote.breaker }));
}

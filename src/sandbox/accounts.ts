// The keys the sandbox accepts. Each belongs to an account of the integrator's: it may manage only
// its own institutes, and the remote counts its calls (and limits them) per key, as the live
// service does ("500 calls per minute per API key").
import type { IncomingHttpHeaders } from 'node:http';
import { type Refusal, type SandboxCredentials, checkAuth, parseBasic } from './auth.ts';
import { type RateLimiter, createRateLimiter } from './rateLimit.ts';

export interface SandboxAccount {
  /** Names the key in `calls.byAccount` and in `refuseKey.accounts`. */
  name: string;
  credentials: SandboxCredentials;
  /** The institutes this key may manage. */
  instituteIds: string[];
  /** Calls this key may make per window; default: the fault config's `rateLimitPerMinute`. */
  rateLimitPerMinute?: number | undefined;
}

export interface KeyState {
  readonly name: string;
  readonly credentials: SandboxCredentials;
  readonly instituteIds: ReadonlySet<string>;
  readonly rateLimitPerMinute: number | undefined;
  readonly limiter: RateLimiter;
}

export function keyStates(accounts: readonly SandboxAccount[]): KeyState[] {
  const names = new Set<string>();
  return accounts.map((account) => {
    if (names.has(account.name)) throw new Error(`sandbox account ${account.name} is given twice`);
    names.add(account.name);
    return {
      name: account.name,
      credentials: account.credentials,
      instituteIds: new Set(account.instituteIds),
      rateLimitPerMinute: account.rateLimitPerMinute,
      limiter: createRateLimiter(),
    };
  });
}

/** The key a request authenticates as, or the 401/403 to answer (checked against that key's headers). */
export function identify(headers: IncomingHttpHeaders, keys: readonly KeyState[]): { key: KeyState } | { refusal: Refusal } {
  const basic = parseBasic(headers.authorization);
  const key = typeof basic === 'object' ? keys.find((k) => k.credentials.userId === basic.userId && k.credentials.apiKey === basic.apiKey) : undefined;
  // An unknown key gets the first key's answer: "invalid credentials" (or what is missing).
  const answering = key ?? keys[0];
  if (!answering) throw new Error('the sandbox has no API key to check a request against: it always has its primary account');
  const refusal = checkAuth(headers, answering.credentials);
  return refusal || !key ? { refusal: refusal ?? { status: 401, message: 'invalid credentials' } } : { key };
}

// Redis key names of what is shared per API key (the call budget and the credentials breaker),
// derived without putting the key itself into a Redis key name.
import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';

export function budgetKey(config: Pick<Config, 'queuePrefix' | 'classroom'>): string {
  const fingerprint = createHash('sha256').update(`${config.classroom.userId}:${config.classroom.apiKey}`).digest('hex').slice(0, 16);
  return `${config.queuePrefix}:ratelimit:${fingerprint}`;
}

export const breakerKey = (config: Pick<Config, 'queuePrefix' | 'classroom'>): string => `${budgetKey(config)}:breaker`;

// Redis key names of what is shared per API key (the call budget and the credentials breaker),
// derived without putting the key itself into a Redis key name.
import { createHash } from 'node:crypto';

/** Whose budget: the queue prefix and the API key it is shared by. */
export interface BudgetOwner {
  queuePrefix: string;
  classroom: { userId: string; apiKey: string };
}

export function budgetKey(owner: BudgetOwner): string {
  const fingerprint = createHash('sha256').update(`${owner.classroom.userId}:${owner.classroom.apiKey}`).digest('hex').slice(0, 16);
  return `${owner.queuePrefix}:ratelimit:${fingerprint}`;
}

export const breakerKey = (owner: BudgetOwner): string => `${budgetKey(owner)}:breaker`;

/** What the account's processes learned of the remote's read lag (src/sync/lag-monitor.ts). */
export const lagKey = (owner: BudgetOwner): string => `${budgetKey(owner)}:lag`;

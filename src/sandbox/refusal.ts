// A refused key: the integrator's key is revoked or its account suspended, so every call answers
// 401 or 403 until an operator fixes it (field notes, "The key stops working for everyone at once").
// Nothing about any one class or institute is wrong, so the messages name neither.
import { z } from 'zod';
import type { Refusal } from './auth.ts';

export const REFUSAL_STATUSES = [401, 403] as const;
export type RefusalStatus = (typeof REFUSAL_STATUSES)[number];

export const refuseKeySchema = z.strictObject({
  /** Default 401. */
  status: z.union([z.literal(401), z.literal(403)], { error: 'must be 401 or 403' }).optional(),
  /** Ends by itself this long after the config was set (sandbox clock); absent = until cleared. */
  forMs: z
    .number({ error: 'must be a number' })
    .int('must be an integer')
    .min(1, 'must be at least 1')
    .max(86_400_000, 'must be at most 86400000 (a day)')
    .optional(),
  /** Only these accounts' keys (by sandbox account name); absent = every key. */
  accounts: z
    .array(z.string({ error: 'must be account names' }).min(1))
    .min(1, 'must name at least one account')
    .optional(),
});
export type RefuseKey = z.infer<typeof refuseKeySchema>;

const MESSAGES: Record<RefusalStatus, string> = {
  401: 'invalid credentials: this API key has been revoked',
  403: 'this API key is suspended',
};

/**
 * The refusal in force at `now`, if any. `since` is when the config holding `rule` was set, so a
 * refusal with `forMs` lapses without anyone clearing it, as a suspension that is lifted would.
 */
export function activeRefusal(rule: RefuseKey | undefined, since: number, now: number, account?: string): Refusal | undefined {
  if (!rule) return undefined;
  if (rule.accounts && (account === undefined || !rule.accounts.includes(account))) return undefined;
  if (rule.forMs !== undefined && now >= since + rule.forMs) return undefined;
  const status = rule.status ?? 401;
  return { status, message: MESSAGES[status] };
}

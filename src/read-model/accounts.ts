// Batches by account: what `status`, the batch API's neighbours and the metrics show per account.
// The account of a batch is the one serving its institute now (configuration, not a stored column),
// so moving an institute to another account moves its batches' counts with it.
import type { Account } from '../accounts/types.ts';
import { BATCH_STATES, type BatchState, type Db, countByInstituteAndState } from '../mapping/index.ts';

export interface AccountCounts {
  /** The account's name, or `(no account)` for institutes no account serves. */
  account: string;
  institutes: string[];
  batches: Record<BatchState, number>;
}

export const NO_ACCOUNT = '(no account)';

/** Every account (even one without batches), then institutes no account serves, if any have batches. */
export async function countByAccount(db: Db, accounts: readonly Account[]): Promise<AccountCounts[]> {
  const rows = await countByInstituteAndState(db);
  const anyInstitute = accounts.find((a) => a.anyInstitute);
  const owner = new Map<string, string>();
  for (const account of accounts) for (const instituteId of account.instituteIds) owner.set(instituteId, account.name);
  const result = new Map<string, AccountCounts>(accounts.map((a) => [a.name, { account: a.name, institutes: [...a.instituteIds], batches: zero() }]));
  for (const { instituteId, state, n } of rows) {
    const name = owner.get(instituteId) ?? anyInstitute?.name ?? NO_ACCOUNT;
    let entry = result.get(name);
    if (!entry) {
      entry = { account: name, institutes: [], batches: zero() };
      result.set(name, entry);
    }
    if (!entry.institutes.includes(instituteId)) entry.institutes.push(instituteId);
    entry.batches[state] += n;
  }
  return [...result.values()];
}

function zero(): Record<BatchState, number> {
  return Object.fromEntries(BATCH_STATES.map((s) => [s, 0])) as Record<BatchState, number>;
}

/** `account north: 120 synced, 3 pending, 1 failed (2 institutes)`; states with none left out. */
export function formatAccountCounts(counts: AccountCounts): string {
  const states = Object.entries(counts.batches)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`);
  const institutes = counts.institutes.length === 1 ? `institute ${counts.institutes[0]}` : `${counts.institutes.length} institutes`;
  const name = counts.account === NO_ACCOUNT ? 'no account' : `account ${counts.account}`;
  return `${name}: ${states.length ? states.join(', ') : 'no batches'} (${institutes})`;
}

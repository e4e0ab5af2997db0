// Which client reads an institute's listing: the one of the account serving it. An institute no
// account serves, or whose account's key is refused, is skipped for this pass with the reason;
// the other accounts' institutes are reconciled as usual.
import type { Remotes } from '../accounts/remotes.ts';
import type { ClassroomClient } from '../classroom/client.ts';
import { describeBreaker } from '../ratelimit/breaker.ts';

/** An institute this pass cannot read; `message` says why and what to do. */
export class AccountUnavailableError extends Error {
  override readonly name = 'AccountUnavailableError';
}

export type ClientFor = (instituteId: string) => Promise<ClassroomClient>;

/** For one pass: each account's breaker is read once, when its first institute is reached. */
export function clientsOf(remotes: Pick<Remotes, 'forInstitute'>): ClientFor {
  const refused = new Map<string, Promise<string | undefined>>();
  return async (instituteId) => {
    const remote = remotes.forInstitute(instituteId);
    if (!remote) throw new AccountUnavailableError("no account serves it: add it to an account's instituteIds in CLASSROOM_ACCOUNTS_FILE");
    const { name } = remote.account;
    let why = refused.get(name);
    if (!why) {
      why = remote.breaker.state().then((state) => (state ? describeBreaker(state) : undefined));
      refused.set(name, why);
    }
    const reason = await why;
    if (reason) throw new AccountUnavailableError(`the API key of account ${name} is refused (${reason}); its institutes are read again once it works`);
    return remote.classroom;
  };
}

/** Whether every account's key is refused now: then a pass could read nothing at all. */
export async function everyKeyRefused(remotes: Pick<Remotes, 'all'>): Promise<string | undefined> {
  const states = await Promise.all(remotes.all.map(async (remote) => ({ name: remote.account.name, state: await remote.breaker.state() })));
  const reasons: string[] = [];
  for (const { name, state } of states) {
    if (!state) return undefined;
    reasons.push((states.length > 1 ? `account ${name}: ` : '') + describeBreaker(state));
  }
  return reasons.join('; ');
}

// What `classroom-sync status` prints (src/cli/status.ts), loaded when the command runs.
import { breakersOf } from '../accounts/remotes.ts';
import { maskJoinLink } from '../logging/logger.ts';
import type { CredentialsBreaker } from '../ratelimit/breaker.ts';
import {
  countByAccount,
  countByState,
  findBatch,
  formatAccountCounts,
  formatBatch,
  formatLanes,
  institutesOf,
  laneStats,
  notKnownUnder,
  refusedKeyLine,
  TERMINAL_STATES,
  viewOf,
} from '../read-model/index.ts';
import type { Runtime } from '../runtime/runtime.ts';

export interface StatusFlags {
  json?: boolean;
  institute?: string;
  showLink?: boolean;
}

/**
 * One line per state, then the queue's lanes, then (with several accounts) a line per account, or
 * one JSON object: the counts, `lanes` and `accounts`. Then a line per account whose key is refused.
 */
export async function printCounts(rt: Runtime, json: boolean): Promise<void> {
  const db = rt.database.db;
  const several = rt.config.accounts.length > 1;
  const [counts, lanes, accounts] = await Promise.all([countByState(db), laneStats(db), several ? countByAccount(db, rt.config.accounts) : undefined]);
  if (json) {
    const perAccount = accounts && Object.fromEntries(accounts.map(({ account, ...rest }) => [account, rest]));
    console.log(JSON.stringify({ ...counts, lanes, ...(perAccount ? { accounts: perAccount } : {}) }));
  } else {
    const lines = [...Object.entries(counts).map(([s, n]) => `${s.padEnd(13)} ${n}`), formatLanes(lanes)];
    if (accounts) lines.push('accounts', ...accounts.map((a) => `  ${formatAccountCounts(a)}`));
    console.log(lines.join('\n'));
  }
  // On stderr with --json, so the counts stay the JSON they always were.
  for (const { account, breaker } of breakersOf(rt.remotes)) await printRefusal(rt, breaker, account, json);
}

/** "credentials refused since T" for an account whose key is refused (named when there are several). */
async function printRefusal(rt: Runtime, breaker: CredentialsBreaker, account: string, json: boolean): Promise<void> {
  const several = rt.config.accounts.length > 1;
  const refused = await refusedKeyLine(breaker, rt.config.classroom.keyProbeEveryMs, several ? account : undefined);
  if (refused) (json ? console.error : console.log)(refused);
}

/**
 * The batch's view, its join link masked unless `--show-link`; for an unknown id, exit code 1 and
 * the institutes it is known under instead.
 */
export async function printBatch(rt: Runtime, batchId: string, opts: StatusFlags): Promise<void> {
  const instituteId = opts.institute ?? rt.config.classroom.instituteId;
  const row = await findBatch(rt.database.db, { instituteId, batchId });
  if (!row) {
    console.error(`batch ${batchId} is ${notKnownUnder(instituteId, await institutesOf(rt.database.db, batchId))}`);
    process.exitCode = 1;
    return;
  }
  const view = viewOf(row);
  const showLink = opts.showLink === true;
  // JSON output is pasted into tickets and chats as readily as the text: the link stays masked there too.
  console.log(opts.json ? JSON.stringify(showLink ? view : { ...view, joinLink: maskJoinLink(view.joinLink) }) : formatBatch(view, showLink));
  // An unfinished batch that waits because its account's key is refused says so.
  const remote = rt.remotes.forInstitute(row.instituteId);
  if (remote && !TERMINAL_STATES.includes(row.state)) await printRefusal(rt, remote.breaker, remote.account.name, opts.json === true);
}

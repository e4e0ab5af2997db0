// `check` with CLASSROOM_ACCOUNTS_FILE: one line per account (its harmless read, with its own
// credentials), and a line for each account whose key the fleet currently holds as refused. A fix
// names the account's field in the file rather than the CLASSROOM_* setting it replaces.
import type { Account } from '../accounts/types.ts';
import type { Config } from '../config/config.ts';
import type { ClassroomSettings } from '../classroom/settings.ts';
import type { Finding } from './preflight.ts';
import { type BreakerState, describeBreaker } from '../ratelimit/breaker.ts';

/** What `check` does for one set of settings (handed in by check.ts, which owns it). */
export interface AccountChecks {
  checkClassroom(settings: ClassroomSettings): Promise<Finding>;
  readBreaker(config: Config, settings: ClassroomSettings): Promise<BreakerState | undefined>;
}

/** Fields of an account in the file, for the settings a fix names (longest names first). */
const FIELDS: readonly [string, string][] = [
  ['CLASSROOM_NAMESPACE_HEADER', 'namespaceHeader'],
  ['CLASSROOM_X_API_KEY', 'xApiKey'],
  ['CLASSROOM_API_KEY', 'apiKey'],
  ['CLASSROOM_USER_ID', 'userId'],
  ['CLASSROOM_USER_AGENT', 'userAgent'],
  ['CLASSROOM_NAMESPACE', 'namespace'],
  ['CLASSROOM_INSTITUTE_ID', 'instituteIds'],
  ['CLASSROOM_BASE_URL', 'baseUrl'],
];

export async function checkAccounts(config: Config, file: string, redisReachable: boolean, checks: AccountChecks): Promise<Finding[]> {
  const intro: Finding = {
    status: 'note',
    subject: 'accounts',
    detail: `${config.accounts.length} (${config.accounts.map((a) => a.name).join(', ')}) from ${file}; events without an institute go to ${config.classroom.instituteId}`,
  };
  const findings = await Promise.all(config.accounts.map((account) => checkAccount(account, file, checks)));
  const refused = redisReachable
    ? await Promise.all(config.accounts.map((account, i) => refusedFinding(config, account, findings[i]?.status === 'ok', checks)))
    : [];
  return [intro, ...findings, ...refused.filter((f): f is Finding => f !== undefined)];
}

async function checkAccount(account: Account, file: string, checks: AccountChecks): Promise<Finding> {
  const finding = await checks.checkClassroom(account.classroom);
  const subject = `account ${account.name}`;
  const institutes = account.instituteIds.length > 1 ? ` (serves ${account.instituteIds.length} institutes)` : '';
  if (finding.status !== 'fail') return { ...finding, subject, detail: `${finding.detail}${institutes}` };
  // The CLASSROOM_* account (no file entry) keeps the settings' names.
  return { ...finding, subject, fix: account.name === 'default' ? finding.fix : inFile(finding.fix, account.name, file) };
}

function inFile(fix: string, name: string, file: string): string {
  let text = fix;
  for (const [setting, field] of FIELDS) text = text.replaceAll(setting, field);
  return `In ${file}, account "${name}": ${text}`;
}

/** Undefined while the fleet does not hold the account's key as refused. */
async function refusedFinding(config: Config, account: Account, worksNow: boolean, checks: AccountChecks): Promise<Finding | undefined> {
  const subject = `account ${account.name}`;
  try {
    const state = await checks.readBreaker(config, account.classroom);
    if (!state) return undefined;
    const every = `${Math.round(config.classroom.keyProbeEveryMs / 1000)} s`;
    if (worksNow)
      return {
        status: 'warn',
        subject,
        detail: `${describeBreaker(state)}, but the key works now`,
        fix: `Nothing to do: the next probe (every ${every}) closes it.`,
      };
    return {
      status: 'fail',
      subject,
      detail: `${describeBreaker(state)}: its batches wait, and a worker probes every ${every}`,
      fix: `Fix the account's credentials in ${config.accountsFile} and restart the workers; its batches resume by themselves once a probe succeeds.`,
    };
  } catch (error) {
    return { status: 'warn', subject, detail: `could not read the credentials breaker from Redis (${error instanceof Error ? error.message : String(error)})` };
  }
}

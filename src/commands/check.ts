// `classroom-sync check`: is this configuration good enough to sync? PostgreSQL and Redis are
// reached, and the remote is asked one harmless read (an institute listing filtered by a search term
// that matches nothing), which exercises every credential and header the writes will carry.
import { randomBytes } from 'node:crypto';
import { UNMETERED, createRemoteClient } from '../accounts/clients.ts';
import type { ClassroomSettings } from '../classroom/client.ts';
import { isClassroomError } from '../classroom/errors.ts';
import { type Config, SANDBOX_DEFAULTS } from '../config/config.ts';
import { configWarnings } from '../config/warnings.ts';
import { checkAccounts } from './check-accounts.ts';
import { type Finding, checkPostgres, checkRedis, formatFinding } from './preflight.ts';
import { createCredentialsBreaker, describeBreaker } from '../ratelimit/breaker.ts';
import { breakerKey } from '../ratelimit/keys.ts';
import { createRedis } from '../redis/connection.ts';
import { urlForLog } from '../support/urls.ts';

export interface CheckOptions {
  /** The `.env` file the CLI loaded, if any (shown so the operator knows which settings were used). */
  envFile?: string | undefined;
}

/** Prints one line per check; returns the exit code (1 when anything failed). */
export async function runCheck(config: Config, options: CheckOptions = {}, out: (line: string) => void = console.log): Promise<number> {
  out(options.envFile ? `settings: environment, plus ${options.envFile}` : 'settings: environment only (no .env in this directory)');
  const [postgres, redis] = await Promise.all([checkPostgres(config.databaseUrl), checkRedis(config.redisUrl)]);
  const warnings = configWarnings(config).map(({ subject, message }): Finding => ({ status: 'warn', subject, detail: message }));
  const findings = [postgres, redis, ...(await remoteFindings(config, redis.status !== 'fail')), ...warnings, writePathNote(config.classroom)];
  for (const f of findings) out(formatFinding(f));
  const failed = findings.filter((f) => f.status === 'fail').length;
  out(failed === 0 ? 'all checks passed' : `${failed} check(s) failed; fix the setting named above and run \`classroom-sync check\` again`);
  return failed === 0 ? 0 : 1;
}

/** The remote as each account sees it (one account: as before accounts existed). */
async function remoteFindings(config: Config, redisReachable: boolean): Promise<Finding[]> {
  if (config.accountsFile) return checkAccounts(config, config.accountsFile, redisReachable, { checkClassroom, readBreaker });
  const remote = await checkClassroom(config.classroom);
  return redisReachable ? [remote, await checkBreaker(config, remote.status === 'ok')] : [remote];
}

/** One read call with the configured credentials and headers; never writes. */
export async function checkClassroom(settings: ClassroomSettings): Promise<Finding> {
  // One read outside the fleet's budget: no slot, no breaker, no metrics (accounts/clients.ts).
  const client = createRemoteClient(settings, UNMETERED);
  // A search term no class name contains keeps the answer tiny (the listing has no pagination).
  const searchTerm = `classroom-sync-check-${randomBytes(6).toString('hex')}`;
  const started = performance.now();
  try {
    await client.listClasses(settings.instituteId, { searchTerm });
    const ms = Math.round(performance.now() - started);
    return {
      status: 'ok',
      subject: 'classroom service',
      detail: `${urlForLog(settings.baseUrl)} accepted the credentials, x-api-key, user-agent and ${settings.namespaceHeader}, and knows institute ${settings.instituteId} (${ms} ms)`,
    };
  } catch (error) {
    const { detail, fix } = explainFailure(error, settings);
    return { status: 'fail', subject: 'classroom service', detail, fix };
  }
}

/** Turns the failed read into the setting to fix, in plain words. */
export function explainFailure(error: unknown, s: ClassroomSettings): { detail: string; fix: string } {
  const detail = `${urlForLog(s.baseUrl)}: ${error instanceof Error ? error.message : String(error)}`;
  if (!isClassroomError(error)) return { detail, fix: 'Unexpected error; run with LOG_LEVEL=debug and report it.' };
  const status = error.httpStatus ?? error.bodyStatus;
  // The remote's own words: it sends no error codes, so only its message can name the header it refused.
  const said = (error.remoteMessage ?? '').toLowerCase();
  if (error.kind === 'not_sent' && s.baseUrl === SANDBOX_DEFAULTS.CLASSROOM_BASE_URL) {
    return {
      detail,
      fix: "CLASSROOM_BASE_URL is the built-in sandbox's default address and nothing listens there: set it (and the credentials) for the real service in .env, or start `npx classroom-sync sandbox` to check against the sandbox.",
    };
  }
  if (error.kind === 'not_sent' || (error.reason === 'connection_lost' && status === undefined)) {
    return {
      detail,
      fix: 'CLASSROOM_BASE_URL is wrong or unreachable from here: check its scheme, host and port (the live service is e.g. https://api.wiseapp.live), and any proxy or firewall.',
    };
  }
  if (error.reason === 'timeout') {
    return { detail, fix: `No answer within CLASSROOM_TIMEOUT (${s.timeoutMs} ms): check CLASSROOM_BASE_URL and the network path to it.` };
  }
  if (status === 401) {
    return {
      detail,
      fix: 'The service refused the Basic credentials: check CLASSROOM_USER_ID and CLASSROOM_API_KEY (the 32-character key issued with that user id).',
    };
  }
  if (status === 403) return { detail, fix: forbiddenFix(said, s) };
  if (status === 404) return { detail, fix: notFoundFix(said, s) };
  if (status === 429) {
    return { detail, fix: 'The key is over its call budget right now (HTTP 429): the settings could not be verified. Try again in a minute.' };
  }
  if (status !== undefined && status >= 500) {
    return { detail, fix: 'The service had an internal error; the settings could not be verified. Try again later.' };
  }
  if (error.reason === 'not_envelope' || error.reason === 'unexpected_shape') {
    return { detail, fix: 'The answer is not the classroom API: CLASSROOM_BASE_URL probably points at a website, a proxy or the wrong host.' };
  }
  if (error.httpStatus !== undefined && error.remoteMessage === undefined) {
    return {
      detail,
      fix: `The answer carried no message in the service's format: CLASSROOM_BASE_URL (${urlForLog(s.baseUrl)}) may point at something other than the classroom API.`,
    };
  }
  return { detail, fix: 'The service refused the read; its message above names the reason.' };
}

function forbiddenFix(said: string, s: ClassroomSettings): string {
  if (/x-api-key/.test(said)) return 'The x-api-key header was refused: check CLASSROOM_X_API_KEY.';
  if (/user-agent/.test(said)) {
    return `The user-agent was refused: set CLASSROOM_USER_AGENT to the value issued to you (the live service expects VendorIntegrations/<namespace>; now "${s.userAgent}").`;
  }
  if (/namespace/.test(said)) {
    return (
      `The namespace was refused: check CLASSROOM_NAMESPACE (now "${s.namespace}") and CLASSROOM_NAMESPACE_HEADER ` +
      `(now ${s.namespaceHeader}; the spec says x-service-namespace, the live service expects x-wise-namespace).`
    );
  }
  if (/institute/.test(said)) return `Institute ${s.instituteId} is not yours to manage: check CLASSROOM_INSTITUTE_ID.`;
  return 'Access refused (HTTP 403): check CLASSROOM_X_API_KEY, CLASSROOM_USER_AGENT, CLASSROOM_NAMESPACE and CLASSROOM_NAMESPACE_HEADER.';
}

function notFoundFix(said: string, s: ClassroomSettings): string {
  // A missing route says nothing about the institute: the base URL (or a path prefix in it) is wrong.
  if (/no route|cannot get|route .*not found/.test(said)) {
    return `No such API route: CLASSROOM_BASE_URL (${urlForLog(s.baseUrl)}) is probably wrong, e.g. a path that should not be there.`;
  }
  if (/institute/.test(said)) return `The service does not know institute ${s.instituteId}: check CLASSROOM_INSTITUTE_ID.`;
  return `Not found (HTTP 404): check CLASSROOM_BASE_URL (${urlForLog(s.baseUrl)}) and CLASSROOM_INSTITUTE_ID (${s.instituteId}).`;
}

/** The fleet's credentials breaker: do the workers consider the key refused right now? */
async function checkBreaker(config: Config, keyWorksNow: boolean): Promise<Finding> {
  const subject = 'workers';
  try {
    const state = await readBreaker(config, config.classroom);
    if (!state) return { status: 'ok', subject, detail: 'the fleet is not holding back: no refused key recorded' };
    const every = `${Math.round(config.classroom.keyProbeEveryMs / 1000)} s`;
    if (keyWorksNow) {
      return {
        status: 'warn',
        subject,
        detail: `${describeBreaker(state)}, but the key works now`,
        fix: `Nothing to do: the next probe (every ${every}) closes it and the workers resume.`,
      };
    }
    return {
      status: 'fail',
      subject,
      detail: `${describeBreaker(state)}: workers take no jobs and probe every ${every}`,
      fix: 'Fix the credentials named above (CLASSROOM_USER_ID, CLASSROOM_API_KEY, CLASSROOM_X_API_KEY, the headers) in every worker; they resume by themselves once a probe succeeds.',
    };
  } catch (error) {
    return { status: 'warn', subject, detail: `could not read the credentials breaker from Redis (${error instanceof Error ? error.message : String(error)})` };
  }
}

/** The breaker of the account whose settings are `classroom`, read with a connection of its own. */
export async function readBreaker(config: Config, classroom: ClassroomSettings) {
  const redis = createRedis(config.redisUrl, 'probe', { connectTimeout: 5_000, disconnectTimeout: 100 });
  try {
    await redis.connect();
    return await createCredentialsBreaker(redis, breakerKey({ queuePrefix: config.queuePrefix, classroom })).state();
  } finally {
    redis.disconnect();
  }
}

/** What a read cannot prove: the write-only settings. Said every time so nobody assumes otherwise. */
function writePathNote(s: ClassroomSettings): Finding {
  return {
    status: 'note',
    subject: 'not checked',
    detail:
      `CLASSROOM_ADD_CLASS_PATH (${s.addClassPath}) and CLASSROOM_EDIT_CLASS_METHOD (${s.editClassMethod}) are used only by writes, ` +
      'which a check must not make. If one is wrong, the first sync fails with HTTP 404/405 and creates nothing: ' +
      'fix it, then `classroom-sync retry --failed`.',
  };
}

// `classroom-sync check`: is this configuration good enough to sync? PostgreSQL and Redis are
// reached, and the remote is asked one harmless read (an institute listing filtered by a search term
// that matches nothing), which exercises every credential and header the writes will carry.
import { randomBytes } from 'node:crypto';
import { type ClassroomSettings, createClassroomClient } from '../classroom/client.ts';
import { isClassroomError } from '../classroom/errors.ts';
import { type Config, SANDBOX_DEFAULTS } from '../config.ts';
import { type Finding, checkPostgres, checkRedis, formatFinding } from './preflight.ts';

export interface CheckOptions {
  /** The `.env` file the CLI loaded, if any (shown so the operator knows which settings were used). */
  envFile?: string | undefined;
}

/** Prints one line per check; returns the exit code (1 when anything failed). */
export async function runCheck(config: Config, options: CheckOptions = {}, out: (line: string) => void = console.log): Promise<number> {
  out(options.envFile ? `settings: environment, plus ${options.envFile}` : 'settings: environment only (no .env in this directory)');
  const [postgres, redis, remote] = await Promise.all([
    checkPostgres(config.databaseUrl),
    checkRedis(config.redisUrl),
    checkClassroom(config.classroom),
  ]);
  const findings = [postgres, redis, remote, writePathNote(config.classroom)];
  for (const f of findings) out(formatFinding(f));
  const failed = findings.filter((f) => f.status === 'fail').length;
  out(failed === 0 ? 'all checks passed' : `${failed} check(s) failed; fix the setting named above and run \`classroom-sync check\` again`);
  return failed === 0 ? 0 : 1;
}

/** One read call with the configured credentials and headers; never writes. */
export async function checkClassroom(settings: ClassroomSettings): Promise<Finding> {
  const client = createClassroomClient(settings);
  // A search term no class name contains keeps the answer tiny (the listing has no pagination).
  const searchTerm = `classroom-sync-check-${randomBytes(6).toString('hex')}`;
  const started = performance.now();
  try {
    await client.listClasses(settings.instituteId, { searchTerm });
    const ms = Math.round(performance.now() - started);
    return {
      status: 'ok',
      subject: 'classroom service',
      detail: `${settings.baseUrl} accepted the credentials, x-api-key, user-agent and ${settings.namespaceHeader}, and knows institute ${settings.instituteId} (${ms} ms)`,
    };
  } catch (error) {
    const { detail, fix } = explainFailure(error, settings);
    return { status: 'fail', subject: 'classroom service', detail, fix };
  }
}

/** Turns the failed read into the setting to fix, in plain words. */
export function explainFailure(error: unknown, s: ClassroomSettings): { detail: string; fix: string } {
  const detail = `${s.baseUrl}: ${error instanceof Error ? error.message : String(error)}`;
  if (!isClassroomError(error)) return { detail, fix: 'Unexpected error; run with LOG_LEVEL=debug and report it.' };
  const status = error.httpStatus ?? error.bodyStatus;
  const said = error.message.toLowerCase();
  if (error.kind === 'not_sent' && s.baseUrl === SANDBOX_DEFAULTS.CLASSROOM_BASE_URL) {
    return { detail, fix: 'CLASSROOM_BASE_URL is the built-in sandbox\'s default address and nothing listens there: set it (and the credentials) for the real service in .env, or start `npx classroom-sync sandbox` to check against the sandbox.' };
  }
  if (error.kind === 'not_sent' || (status === undefined && /lost its connection/.test(said))) {
    return { detail, fix: 'CLASSROOM_BASE_URL is wrong or unreachable from here: check its scheme, host and port (the live service is e.g. https://api.wiseapp.live), and any proxy or firewall.' };
  }
  if (/timed out/.test(said)) {
    return { detail, fix: `No answer within CLASSROOM_TIMEOUT (${s.timeoutMs} ms): check CLASSROOM_BASE_URL and the network path to it.` };
  }
  if (status === 401) {
    return { detail, fix: 'The service refused the Basic credentials: check CLASSROOM_USER_ID and CLASSROOM_API_KEY (the 32-character key issued with that user id).' };
  }
  if (status === 403) return { detail, fix: forbiddenFix(said, s) };
  if (status === 404) return { detail, fix: notFoundFix(said, s) };
  if (status === 429) {
    return { detail, fix: 'The key is over its call budget right now (HTTP 429): the settings could not be verified. Try again in a minute.' };
  }
  if (status !== undefined && status >= 500) {
    return { detail, fix: 'The service had an internal error; the settings could not be verified. Try again later.' };
  }
  if (/not the json envelope|unexpected shape/.test(said)) {
    return { detail, fix: 'The answer is not the classroom API: CLASSROOM_BASE_URL probably points at a website, a proxy or the wrong host.' };
  }
  if (/failed with http \d+$/.test(said)) {
    return { detail, fix: `The answer carried no message in the service's format: CLASSROOM_BASE_URL (${s.baseUrl}) may point at something other than the classroom API.` };
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
    return `No such API route: CLASSROOM_BASE_URL (${s.baseUrl}) is probably wrong, e.g. a path that should not be there.`;
  }
  if (/institute/.test(said)) return `The service does not know institute ${s.instituteId}: check CLASSROOM_INSTITUTE_ID.`;
  return `Not found (HTTP 404): check CLASSROOM_BASE_URL (${s.baseUrl}) and CLASSROOM_INSTITUTE_ID (${s.instituteId}).`;
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

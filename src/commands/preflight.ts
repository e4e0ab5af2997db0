// Can we reach PostgreSQL and Redis? Asked once, up front, by `demo` and `check`, so a missing
// server ends in one sentence that says what to do, not in a stack trace or a silent reconnect loop.
import pg from 'pg';
import { redactUrl } from '../db/migrate.ts';
import { type Redis, createRedis, isCluster, pingRedis } from '../redis/connection.ts';
import { redactRedisUrl } from '../redis/url.ts';

interface Checked {
  /** What was checked, e.g. "PostgreSQL". */
  subject: string;
  /** What was found, in one line. */
  detail: string;
}

/** One line of `check` (and the demo's preflight); a failure always says what to do about it, a warning may. */
export type Finding =
  | (Checked & { status: 'ok' | 'note'; fix?: undefined })
  | (Checked & { status: 'warn'; fix?: string })
  | (Checked & { status: 'fail'; fix: string });

const START_THEM = 'Start them with `docker compose up -d postgres redis`, or set DATABASE_URL / REDIS_URL to servers you have';
const CONNECT_TIMEOUT_MS = 5_000;

export async function checkPostgres(url: string): Promise<Finding> {
  const where = redactUrl(url);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  try {
    await client.connect();
    const { rows } = await client.query<{ migrated: boolean }>("select to_regclass('public.batch_classes') is not null as migrated");
    const migrated = rows[0]?.migrated === true;
    return { status: 'ok', subject: 'PostgreSQL', detail: `${where} reachable${migrated ? '' : '; no tables yet (`classroom-sync migrate` creates them)'}` };
  } catch (error) {
    return postgresFailure(where, error);
  } finally {
    await client.end().catch(() => {});
  }
}

function postgresFailure(where: string, error: unknown): Finding {
  const code = (error as { code?: string }).code;
  const message = (error as Error)?.message ?? String(error);
  if (code === '3D000') {
    // The server answered; only the database is missing, and `migrate` (or the demo) creates it.
    return { status: 'ok', subject: 'PostgreSQL', detail: `${where} reachable; the database does not exist yet (\`classroom-sync migrate\` creates it)` };
  }
  if (code === '28P01' || code === '28000') {
    return { status: 'fail', subject: 'PostgreSQL', detail: `${where} refused the login (${message})`, fix: 'Fix the user name and password in DATABASE_URL.' };
  }
  return { status: 'fail', subject: 'PostgreSQL', detail: `cannot reach ${where} (${code ?? message})`, fix: `${START_THEM}.` };
}

export async function checkRedis(url: string): Promise<Finding> {
  const where = redactRedisUrl(url);
  // No reconnects and no offline queue: one bounded try, so an absent server fails in seconds.
  const redis = createRedis(url, 'probe', {
    connectTimeout: CONNECT_TIMEOUT_MS,
    // Otherwise a refused connection keeps the process alive for ioredis' default 2 s.
    disconnectTimeout: 100,
    connectionName: 'classroom-sync-check',
  });
  // The connect() rejection only says "Connection is closed"; the error event says why.
  let cause: Error | undefined;
  redis.on('error', (error: Error) => {
    cause ??= error;
  });
  try {
    await redis.connect();
    // On a cluster this also wants cluster_state:ok (a node answers PING while its cluster is down).
    await pingRedis(redis);
    const finding = evictionFinding(where, await maxmemoryPolicy(redis));
    return isCluster(redis) && finding.status === 'ok' ? { ...finding, detail: `${finding.detail}; cluster state ok` } : finding;
  } catch (error) {
    const message = (cause as { code?: string } | undefined)?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
    if (/NOAUTH|WRONGPASS/i.test(message)) {
      return {
        status: 'fail',
        subject: 'Redis',
        detail: `${where} refused the login (${message})`,
        fix: 'Put the password in REDIS_URL, e.g. redis://:PASSWORD@host:6379.',
      };
    }
    return { status: 'fail', subject: 'Redis', detail: `cannot reach ${where} (${message})`, fix: `${START_THEM}.` };
  } finally {
    redis.disconnect();
  }
}

/** From INFO, because managed Redis services often refuse CONFIG GET. */
async function maxmemoryPolicy(redis: Redis): Promise<string | undefined> {
  const info = await redis.info('memory').catch(() => '');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
}

function evictionFinding(where: string, policy: string | undefined): Finding {
  if (policy === undefined || policy === 'noeviction') {
    return { status: 'ok', subject: 'Redis', detail: `${where} reachable${policy ? ` (maxmemory-policy ${policy})` : ''}` };
  }
  return {
    status: 'warn',
    subject: 'Redis',
    detail: `${where} reachable, but maxmemory-policy is ${policy}`,
    fix: 'Set maxmemory-policy noeviction: an evicted job is work the queue forgets (the sweep re-enqueues it from PostgreSQL, late).',
  };
}

export function formatFinding(f: Finding): string {
  const tag = { ok: 'ok  ', fail: 'FAIL', warn: 'warn', note: 'note' }[f.status];
  const lines = [`${tag}  ${f.subject.padEnd(18)} ${f.detail}`];
  if (f.fix) lines.push(`${' '.repeat(6)}${' '.repeat(18)} → ${f.fix}`);
  return lines.join('\n');
}

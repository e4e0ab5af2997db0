// Liveness and readiness. /healthz says only "this process answers" (restart it if not);
// /readyz says whether its dependencies answer right now (route traffic elsewhere if not). A
// refused API key shows there too ("degraded"), but does not make the process unready: intake
// still records batches, and every other replica shares the same key, so routing elsewhere would
// only turn integrators' posts away.
//
// The endpoint is open to load balancers, so its body names the check and a short reason in our
// own words; the dependency's or the remote's own error text goes to the log (and to `status`).
//
// A webhook delivery thread that stopped (and is being started again) shows too ("degraded"), and
// does not make the process unready either: syncing and intake still work, and messages wait in
// PostgreSQL for this worker's next thread or any other worker; a load balancer routing elsewhere
// would not deliver a single one sooner.
import { once } from 'node:events';
import type { FastifyBaseLogger, FastifyInstance, LogLevel } from 'fastify';
import type { Database } from '../db/client.ts';
import { type BreakerState, type CredentialsBreaker, describeBreaker } from '../ratelimit/breaker.ts';
import { type Redis, RedisNotReadyError, pingRedis as answers } from '../redis/connection.ts';
import { TimeoutError, withTimeout } from '../support/timeout.ts';
import type { DeliveryThreadState } from '../webhooks/index.ts';

export interface HealthDeps {
  redis: Redis;
  /** Its pool answers `select 1`. */
  database: Pick<Database, 'pool'>;
  /** Each account's credentials breaker: an open one makes readiness `degraded`. */
  breakers: readonly { account: string; breaker: CredentialsBreaker }[];
  /** Per dependency; a hung connection must not hang the probe. */
  timeoutMs: number;
  /** Level of the probes' own request lines. */
  logLevel: LogLevel;
  /** This process's webhook delivery thread, if it runs one (undefined until it starts). */
  webhooks?: (() => DeliveryThreadState | undefined) | undefined;
}

export function registerHealthRoutes(app: FastifyInstance, deps: HealthDeps): void {
  const quiet = { logLevel: deps.logLevel };
  const report = createReporter(app.log);

  app.get('/healthz', quiet, async () => ({ status: 'ok' }));

  app.get('/readyz', quiet, async (_request, reply) => {
    const [redis, postgres] = await Promise.all([
      probe(() => pingRedis(deps.redis, deps.timeoutMs), deps.timeoutMs, 'redis', report),
      probe(() => deps.database.pool.query('select 1'), deps.timeoutMs, 'postgres', report),
    ]);
    const checks = { redis, postgres };
    const failing = Object.entries(checks)
      .filter(([, result]) => result !== 'ok')
      .map(([name]) => name);
    const delivery = deps.webhooks?.();
    const webhooks = delivery ? { webhooks: describeDelivery(delivery) } : {};
    if (failing.length > 0) return reply.code(503).send({ status: 'unavailable', failing, checks: { ...checks, ...webhooks } });
    const refused = await refusedAccounts(deps, report);
    const degraded = refused.length > 0 || (delivery !== undefined && deliveryDown(delivery));
    return { status: degraded ? 'degraded' : 'ready', checks: { ...checks, credentials: refused.length > 0 ? refused.join('; ') : 'ok', ...webhooks } };
  });
}

/** Stopped unasked, and not running again yet (a first start is not "down"). */
function deliveryDown(state: DeliveryThreadState): boolean {
  return state.status === 'restarting' || (state.status === 'starting' && state.restarts > 0);
}

/** "ok", "starting", or since when it is down, how it ended and when the next thread starts. */
function describeDelivery(state: DeliveryThreadState): string {
  if (state.status === 'running') return 'ok';
  if (state.status === 'stopped') return 'stopped';
  if (!deliveryDown(state)) return 'starting';
  const since = state.since.toISOString();
  const ended = state.lastExit ?? 'stopped';
  if (state.status === 'starting') return `delivery thread starting again since ${since} (restart ${state.restarts}; the last one ${ended})`;
  return `delivery thread down since ${since} (${ended}); a new one starts at ${state.nextStartAt?.toISOString() ?? 'once it can'}`;
}

/** Notes a check's outcome: `failure` undefined when it passed. */
type Report = (check: string, failure?: { key: string; level: 'warn' | 'info'; fields: Record<string, unknown>; message: string }) => void;

/**
 * Probes come every few seconds from every load balancer: a failure is logged at its level when it
 * starts or its reason changes, at debug while it lasts, and its end at info.
 */
function createReporter(log: FastifyBaseLogger): Report {
  const failing = new Map<string, string>();
  return (check, failure) => {
    if (!failure) {
      if (failing.delete(check)) log.info({ check }, `readiness: ${check} is ok again`);
      return;
    }
    const known = failing.get(check) === failure.key;
    failing.set(check, failure.key);
    log[known ? 'debug' : failure.level]({ check, ...failure.fields }, failure.message);
  };
}

/**
 * One short description per account whose key is refused, naming the account when there are
 * several: since when, and the HTTP status; what the remote said goes to the log.
 */
async function refusedAccounts(deps: HealthDeps, report: Report): Promise<string[]> {
  const states = await Promise.all(
    deps.breakers.map(async ({ account, breaker }) => ({ account, state: await withTimeout(breaker.state(), deps.timeoutMs, 'redis').catch(() => undefined) })),
  );
  const named = deps.breakers.length > 1;
  return states.flatMap(({ account, state }) => {
    const check = `credentials of account ${account}`;
    if (!state) {
      report(check);
      return [];
    }
    // At info: the process whose call opened the breaker logged it for the fleet, at error.
    const message = `readiness: degraded: the API key of account ${account} is refused: ${describeBreaker(state)}`;
    report(check, { key: state.since.toISOString(), level: 'info', fields: { account }, message });
    return [`${named ? `account ${account}: ` : ''}${refusedSince(state)}`];
  });
}

/** "credentials refused since 2026-11-23T10:00:00.000Z (HTTP 401)". */
function refusedSince(state: BreakerState): string {
  return `credentials refused since ${state.since.toISOString()}${state.status === undefined ? '' : ` (HTTP ${state.status})`}`;
}

/**
 * Never queues a PING on a connection that is down (it would wait there until Redis returns):
 * waits for the connection instead, within the probe's time.
 */
async function pingRedis(redis: Redis, timeoutMs: number): Promise<unknown> {
  if (redis.status !== 'ready') {
    await once(redis, 'ready', { signal: AbortSignal.timeout(timeoutMs) }).catch(() => {
      throw new NotConnectedError(`redis connection is ${redis.status}`);
    });
  }
  // On a cluster also wants cluster_state:ok: a node answers PING while its cluster is down.
  return answers(redis);
}

class NotConnectedError extends Error {
  override readonly name = 'NotConnectedError';
}

/** 'ok', or a short reason of our own; the full error goes to the log. */
async function probe(check: () => Promise<unknown>, timeoutMs: number, what: string, report: Report): Promise<string> {
  try {
    await withTimeout(check(), timeoutMs, what);
    report(what);
    return 'ok';
  } catch (error) {
    const reason = reasonOf(error, timeoutMs);
    report(what, { key: reason, level: 'warn', fields: { err: error, dependency: what }, message: `readiness: ${what} is not answering (${reason})` });
    return reason;
  }
}

/** Error codes of Node (connecting) and PostgreSQL (SQLSTATE), in our words. */
const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'unreachable',
  ENOTFOUND: 'unreachable',
  EAI_AGAIN: 'unreachable',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  ETIMEDOUT: 'unreachable',
  ECONNRESET: 'connection lost',
  EPIPE: 'connection lost',
  '28000': 'login refused',
  '28P01': 'login refused',
  '3D000': 'database missing',
  '53300': 'too many connections',
  '57P03': 'starting up',
};

function reasonOf(error: unknown, timeoutMs: number): string {
  if (error instanceof TimeoutError) return `timed out after ${timeoutMs} ms`;
  if (error instanceof NotConnectedError) return 'not connected';
  if (error instanceof RedisNotReadyError) return 'cluster not ready';
  const code = (error as { code?: unknown }).code;
  return (typeof code === 'string' && REASONS[code]) || 'failed';
}

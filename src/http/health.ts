// Liveness and readiness. /healthz says only "this process answers" (restart it if not);
// /readyz says whether its dependencies answer right now (route traffic elsewhere if not). A
// refused API key shows there too ("degraded"), but does not make the process unready: intake
// still records batches, and every other replica shares the same key, so routing elsewhere would
// only turn integrators' posts away.
import { once } from 'node:events';
import type { FastifyBaseLogger, FastifyInstance, LogLevel } from 'fastify';
import type { Database } from '../db/client.ts';
import { type CredentialsBreaker, describeBreaker } from '../ratelimit/breaker.ts';
import { type Redis, RedisNotReadyError, pingRedis as answers } from '../redis.ts';
import { TimeoutError, withTimeout } from '../timeout.ts';

export interface HealthDeps {
  redis: Redis;
  database: Database;
  /** Each account's credentials breaker: an open one makes readiness `degraded`. */
  breakers: readonly { account: string; breaker: CredentialsBreaker }[];
  /** Per dependency; a hung connection must not hang the probe. */
  timeoutMs: number;
  /** Level of the probes' own request lines. */
  logLevel: LogLevel;
}

export function registerHealthRoutes(app: FastifyInstance, deps: HealthDeps): void {
  const quiet = { logLevel: deps.logLevel };

  app.get('/healthz', quiet, async () => ({ status: 'ok' }));

  app.get('/readyz', quiet, async (request, reply) => {
    const [redis, postgres] = await Promise.all([
      probe(() => pingRedis(deps.redis, deps.timeoutMs), deps.timeoutMs, 'redis', request.log),
      probe(() => deps.database.pool.query('select 1'), deps.timeoutMs, 'postgres', request.log),
    ]);
    const checks = { redis, postgres };
    const failing = Object.entries(checks)
      .filter(([, result]) => result !== 'ok')
      .map(([name]) => name);
    if (failing.length > 0) return reply.code(503).send({ status: 'unavailable', failing, checks });
    const refused = await refusedAccounts(deps);
    if (refused.length > 0) return { status: 'degraded', checks: { ...checks, credentials: refused.join('; ') } };
    return { status: 'ready', checks: { ...checks, credentials: 'ok' } };
  });
}

/** One description per account whose key is refused, naming the account when there are several. */
async function refusedAccounts(deps: HealthDeps): Promise<string[]> {
  const states = await Promise.all(
    deps.breakers.map(async ({ account, breaker }) => ({ account, state: await withTimeout(breaker.state(), deps.timeoutMs, 'redis').catch(() => undefined) })),
  );
  const named = deps.breakers.length > 1;
  return states.flatMap(({ account, state }) => (state ? [`${named ? `account ${account}: ` : ''}${describeBreaker(state)}`] : []));
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

/**
 * 'ok', or a short reason. The endpoint is open to load balancers, so the full error (which may
 * name hosts) goes to the log only.
 */
async function probe(check: () => Promise<unknown>, timeoutMs: number, what: string, log: FastifyBaseLogger): Promise<string> {
  try {
    await withTimeout(check(), timeoutMs, what);
    return 'ok';
  } catch (error) {
    log.warn({ err: error, dependency: what }, `readiness: ${what} is not answering`);
    if (error instanceof TimeoutError) return `no answer within ${timeoutMs} ms`;
    if (error instanceof NotConnectedError) return 'not connected';
    if (error instanceof RedisNotReadyError) return error.message;
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `failed (${code})` : 'failed';
  }
}

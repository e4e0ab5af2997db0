// The queue dashboard (Bull Board) at /admin/queues, behind the operator sign-in.
//
// Retrying a failed *sync* job from the dashboard means "put this batch back", exactly as
// `classroom-sync retry BATCH_ID` does: the mapping leaves `failed`/`needs_review` for the last safe
// step and the job runs again with fresh attempts. Bull Board's own retry would only re-run the job,
// which then finds the batch terminal and does nothing.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { may } from '../access/roles.ts';
import type { Db } from '../db/client.ts';
import type { BatchKey } from '../sync/keys.ts';
import { type SyncQueue, bothQueues } from '../sync/queue.ts';
import { retryBatches } from '../sync/retry-batches.ts';
import { presentedCredentials } from './auth.ts';
import { DROP_URL_CREDENTIALS_JS, type DashboardSession } from './dashboard-session.ts';

export const DASHBOARD_PATH = '/admin/queues';
const API = `${DASHBOARD_PATH}/api/queues`;
const RETRY_ONE = `${API}/:queueName/:jobId/retry`;
const RETRY_ALL = `${API}/:queueName/retry/:queueStatus`;

export interface DashboardDeps {
  db: Db;
  syncQueue: SyncQueue;
  /** Shown beside the sync queue (e.g. the reconciliation queue). */
  extraQueues: readonly Queue[];
  /** Signs requests in (Basic, Bearer or the session cookie); answers 401 otherwise. */
  authenticate: onRequestHookHandler;
  /** Issues the cookie to a browser signed in with Basic. */
  session: DashboardSession;
}

const DROP_CREDENTIALS_SCRIPT = `${DASHBOARD_PATH}/drop-url-credentials.js`;

/**
 * Everything the page loads comes from this server: the dashboard must work with no internet (and
 * never tell a third party who opens it). Inline styles are Bull Board's own.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export interface Dashboard {
  /** Shows one more queue from now on. */
  addQueue(queue: Queue): void;
}

export async function registerDashboard(app: FastifyInstance, deps: DashboardDeps): Promise<Dashboard> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  const board = createBullBoard({
    queues: [deps.syncQueue, ...deps.extraQueues].map((queue) => new BullMQAdapter(queue)),
    // One @bull-board/api for both (package.json's overrides): @bull-board/fastify pins its own patch
    // release, whose adapter types would not match ours (private fields).
    serverAdapter,
    options: { uiConfig: { boardTitle: 'classroom-sync' } },
  });
  await app.register(async (scope) => {
    // Hooks added here cover every route Bull Board registers below, its static files included.
    scope.addHook('onRequest', deps.authenticate);
    scope.addHook('onRequest', async (request, reply) => issueSession(deps.session, request, reply));
    scope.addHook('preHandler', async (request, reply) => retryBridge(deps, request, reply));
    scope.addHook('onSend', async (request, reply, payload) => readOnlyFor(request, servedOffline(reply, payload)));
    scope.get(DROP_CREDENTIALS_SCRIPT, async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(DROP_URL_CREDENTIALS_JS));
    await scope.register(serverAdapter.registerPlugin(), { prefix: DASHBOARD_PATH });
  });
  return { addQueue: (queue) => board.addQueue(new BullMQAdapter(queue)) };
}

/** A browser signed in with Basic gets a session cookie, so its page's own requests stay signed in. */
async function issueSession(session: DashboardSession, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const client = request.apiClient;
  if (!client || request.method !== 'GET' || presentedCredentials(request.headers.authorization).scheme !== 'basic') return;
  // Signed in by now: the Basic password was a client's token, or the cookie was already good.
  if ((await session.verify(request.headers.cookie))?.name === client.name) return;
  // `protocol` is the original request's when TRUST_PROXY believes the proxy's X-Forwarded-Proto.
  const cookie = await session.issue(client, DASHBOARD_PATH, request.protocol === 'https');
  if (cookie) reply.header('set-cookie', cookie);
  else request.log.warn('no dashboard session cookie issued: the session secret could not be read from Redis yet; signed in for this request only');
}

/**
 * A client that may only look gets Bull Board's own read-only mode: its page offers no buttons that
 * would answer 403. Bull Board's read-only mode is per queue, not per user, so the queue list is
 * rewritten for such a client; the 403s themselves come from the sign-in hook (auth.ts).
 */
function readOnlyFor(request: FastifyRequest, payload: unknown): unknown {
  const client = request.apiClient;
  if (!client || may(client, 'dashboard:act') || typeof payload !== 'string' || request.routeOptions.url !== API) return payload;
  const body = JSON.parse(payload) as { queues?: Record<string, unknown>[] };
  for (const queue of body.queues ?? []) Object.assign(queue, { readOnlyMode: true, allowRetries: false, allowCompletedRetries: false });
  return JSON.stringify(body);
}

/**
 * Bull Board's page links its fonts from the internet; without them it falls back to the system's.
 * The page's first script drops credentials from the address (see dashboard-session.ts).
 */
function servedOffline(reply: FastifyReply, payload: unknown): unknown {
  if (typeof payload !== 'string' || !String(reply.getHeader('content-type') ?? '').startsWith('text/html')) return payload;
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  return payload
    .replace(/<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi, '')
    .replace(/<head>/i, `<head>\n    <script src="${DROP_CREDENTIALS_SCRIPT}"></script>`);
}

/** Answers the dashboard's retry requests for failed sync jobs itself; leaves everything else to Bull Board. */
async function retryBridge(deps: DashboardDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
  if (request.method !== 'PUT') return undefined;
  const route = request.routeOptions.url;
  const params = request.params as { queueName?: string; jobId?: string; queueStatus?: string };
  const shown = bothQueues(deps.syncQueue).find((q) => q.name === params.queueName);
  if (!shown) return undefined;

  if (route === RETRY_ONE && params.jobId) {
    const job = await shown.getJob(params.jobId);
    if (!job || (await job.getState()) !== 'failed') return undefined;
    const [result] = await retryBatches({ db: deps.db, queue: deps.syncQueue }, { keys: [keyOf(job.data)] });
    request.log.info(
      { jobId: job.id, batchId: job.data.batchId, from: result?.from, to: result?.to, queued: result?.queued },
      'dashboard retry: batch put back',
    );
    return reply.code(204).send();
  }
  if (route === RETRY_ALL && params.queueStatus === 'failed') {
    const retried = await retryAllFailed(deps, shown);
    request.log.info({ retried }, 'dashboard retry-all: failed batches put back');
    return reply.code(200).send({ retried, skipped: 0 });
  }
  return undefined;
}

async function retryAllFailed(deps: DashboardDeps, shown: Queue): Promise<number> {
  let retried = 0;
  // Each round moves the batches it read out of the failed set, so always read from the start.
  for (;;) {
    const jobs = await shown.getJobs(['failed'], 0, 199);
    if (jobs.length === 0) return retried;
    const results = await retryBatches({ db: deps.db, queue: deps.syncQueue }, { keys: jobs.map((j) => keyOf(j.data)) });
    const moved = results.filter((r) => r.queued).length;
    retried += moved;
    // A job whose batch is unknown to Postgres cannot be put back; stop rather than loop on it.
    if (moved === 0) return retried;
  }
}

function keyOf(data: BatchKey): BatchKey {
  return { instituteId: data.instituteId, batchId: data.batchId };
}

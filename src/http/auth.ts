// Who may call the API and open the dashboard: whoever holds API_TOKEN. Programs send it as
// `Authorization: Bearer <token>`; a browser signs in to the dashboard with HTTP Basic (any user
// name, the token as password), and then holds a session cookie for the page's own requests.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { DashboardSession } from './dashboard-session.ts';

export const REALM = 'classroom-sync';

/**
 * Compares candidates with the token in constant time. Both sides are hashed first so the
 * compared buffers always have equal length and a candidate's length says nothing.
 */
export function createTokenCheck(token: string): (candidate: string | undefined) => boolean {
  const expected = digest(token);
  return (candidate) => candidate !== undefined && timingSafeEqual(digest(candidate), expected);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** What the Authorization header carries: a bearer token, Basic credentials (the password, if it had a colon), or nothing usable. */
export type Presented = { scheme: 'bearer'; secret: string } | { scheme: 'basic'; secret?: string } | { scheme: 'other' | 'none' };

/** Reads the Authorization header without ever logging or echoing it. */
export function presentedCredentials(header: string | undefined): Presented {
  if (!header) return { scheme: 'none' };
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer') return { scheme: 'bearer', secret: value };
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? { scheme: 'basic' } : { scheme: 'basic', secret: decoded.slice(colon + 1) };
  }
  return { scheme: 'other' };
}

/** `/v1/*`: Bearer only; 401 JSON otherwise. */
export function requireBearer(check: (candidate: string | undefined) => boolean): onRequestHookHandler {
  return async (request, reply) => {
    const presented = presentedCredentials(request.headers.authorization);
    if (presented.scheme === 'bearer' && check(presented.secret)) return;
    logRefusal(request, presented);
    return reply
      .code(401)
      .header('www-authenticate', `Bearer realm="${REALM}"`)
      .send({ error: 'unauthorized', message: 'send the API token as "Authorization: Bearer <API_TOKEN>"' });
  };
}

/**
 * `/admin/queues`: Bearer, Basic, or the dashboard's session cookie (see dashboard-session.ts). A
 * 401 carries a Basic challenge so a browser shows its sign-in dialog. Because a browser resends
 * Basic credentials and cookies on its own, requests that change something must come from the
 * dashboard's own pages (same origin), or another site could make a signed-in browser retry or
 * delete jobs.
 */
export function requireOperator(check: (candidate: string | undefined) => boolean, session?: DashboardSession): onRequestHookHandler {
  return async (request, reply) => {
    const presented = presentedCredentials(request.headers.authorization);
    const byCredential = (presented.scheme === 'bearer' || presented.scheme === 'basic') && check(presented.secret);
    const bySession = !byCredential && session?.verify(request.headers.cookie) === true;
    if (!byCredential && !bySession) {
      logRefusal(request, presented);
      return reply
        .code(401)
        .header('www-authenticate', `Basic realm="${REALM}", charset="UTF-8"`)
        .type('text/plain; charset=utf-8')
        .send('Sign in with any user name and the API token as password.\n');
    }
    if ((presented.scheme === 'basic' || bySession) && !isSafeMethod(request.method) && isCrossSite(request)) {
      request.log.warn({ origin: request.headers.origin }, 'refused a cross-site dashboard change');
      return reply.code(403).send({ error: 'forbidden', message: 'dashboard changes must come from the dashboard itself' });
    }
  };
}

function isSafeMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
}

function isCrossSite(request: FastifyRequest): boolean {
  const fetchSite = request.headers['sec-fetch-site'];
  if (typeof fetchSite === 'string') return fetchSite !== 'same-origin' && fetchSite !== 'none';
  const origin = request.headers.origin;
  if (!origin) return false;
  try {
    return new URL(origin).host !== request.host;
  } catch {
    return true;
  }
}

function logRefusal(request: FastifyRequest, presented: Presented): void {
  // The scheme is enough to debug a client; the credential itself never reaches a log.
  request.log.info({ scheme: presented.scheme }, presented.scheme === 'none' ? 'no credentials; 401' : 'wrong credentials; 401');
}

/** For routes that need the token when none is configured: say so instead of pretending they do not exist. */
export function disabledWithoutToken(_request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(503).send({
    error: 'api_disabled',
    message: 'API_TOKEN is not set, so the batch API and the queue dashboard are off; set API_TOKEN (16+ characters) and restart',
  });
}

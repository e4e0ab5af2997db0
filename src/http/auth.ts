// Who may call the API and open the dashboard: the API clients (API_CLIENTS_FILE, and API_TOKEN as
// one admin). Programs send a token as `Authorization: Bearer <token>`; a browser signs in to the
// dashboard with HTTP Basic (any user name, the token as password), and then holds a session
// cookie for the page's own requests. What each client may do is its role's (src/access/roles.ts).
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ClientDirectory } from '../access/directory.ts';
import { type ApiClient, type Capability, may, rolesWith } from '../access/roles.ts';
import type { AuthThrottle } from './auth-throttle.ts';
import type { DashboardSession } from './dashboard-session.ts';

export const REALM = 'classroom-sync';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hooks below; null on routes that need none. */
    apiClient: ApiClient | null;
  }
}

/** What signs a request in: the clients, the failed-sign-in throttle, and (dashboard) its sessions. */
export interface Gate {
  directory: ClientDirectory;
  throttle: AuthThrottle;
  session?: DashboardSession;
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

/** `/v1/*`: Bearer only; 401 JSON otherwise, 429 once the address has failed too often. */
export function requireClient(gate: Gate): onRequestHookHandler {
  return async (request, reply) => {
    if (await throttled(gate, request, reply)) return reply;
    const presented = presentedCredentials(request.headers.authorization);
    const client = presented.scheme === 'bearer' ? gate.directory.byToken(presented.secret) : undefined;
    if (client) {
      request.apiClient = client;
      return;
    }
    if (await refused(gate, request, reply, presented)) return reply;
    return reply
      .code(401)
      .header('www-authenticate', `Bearer realm="${REALM}"`)
      .send({ error: 'unauthorized', message: 'send an API client\'s token as "Authorization: Bearer <token>"' });
  };
}

/**
 * The dashboard (and /metrics with --metrics-auth): Bearer, Basic, or the dashboard's session
 * cookie. A 401 carries a Basic challenge so a browser shows its sign-in dialog. Looking needs
 * `dashboard:view`; any other method `dashboard:act`. Because a browser resends Basic credentials
 * and cookies on its own, requests that change something must come from the dashboard's own pages
 * (same origin), or another site could make a signed-in browser retry or delete jobs.
 */
/** `what` names the route in a 403 ("open the dashboard" by default). */
export function requireDashboard(gate: Gate, what?: string): onRequestHookHandler {
  return async (request, reply) => {
    if (await throttled(gate, request, reply)) return reply;
    const presented = presentedCredentials(request.headers.authorization);
    const byCredential = presented.scheme === 'bearer' || presented.scheme === 'basic' ? gate.directory.byToken(presented.secret) : undefined;
    const client = byCredential ?? (await gate.session?.verify(request.headers.cookie));
    if (!client) {
      if (await refused(gate, request, reply, presented)) return reply;
      return reply
        .code(401)
        .header('www-authenticate', `Basic realm="${REALM}", charset="UTF-8"`)
        .type('text/plain; charset=utf-8')
        .send('Sign in with any user name and your API token as password.\n');
    }
    request.apiClient = client;
    const needed: Capability = isSafeMethod(request.method) ? 'dashboard:view' : 'dashboard:act';
    if (!may(client, needed)) return forbidden(reply, client, needed, needed === 'dashboard:view' ? what : undefined);
    if ((presented.scheme === 'basic' || !byCredential) && !isSafeMethod(request.method) && isCrossSite(request)) {
      request.log.warn({ origin: request.headers.origin }, 'refused a cross-site dashboard change');
      return reply.code(403).send({ error: 'forbidden', message: 'dashboard changes must come from the dashboard itself' });
    }
  };
}

const DOING: Record<Capability, string> = {
  publish: 'publish batch events',
  read: 'read batches',
  'dashboard:view': 'open the dashboard',
  'dashboard:act': 'change anything from the dashboard',
};

/** 403 naming the client, its role, and the roles that may. */
export function forbidden(reply: FastifyReply, client: ApiClient, capability: Capability, doing = DOING[capability]): FastifyReply {
  const roles = rolesWith(capability).join(' or ');
  return reply.code(403).send({
    error: 'forbidden',
    message: `client "${client.name}" (role ${client.role}) may not ${doing}: that needs the ${roles} role`,
  });
}

/** An address already past the limit is answered 429 before its credential is even looked at. */
async function throttled(gate: Gate, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  const retryAfter = await gate.throttle.retryAfter(request.ip);
  if (retryAfter === undefined) return false;
  tooManyFailures(reply, retryAfter);
  return true;
}

/**
 * Counts a wrong credential. True when it was one too many: it has then been answered 429, not 401,
 * so of many guesses sent at once no more than the limit learn that their token was wrong.
 */
async function refused(gate: Gate, request: FastifyRequest, reply: FastifyReply, presented: Presented): Promise<boolean> {
  // A request with no credentials guesses nothing (a browser's first visit is one): only a wrong
  // credential counts.
  const retryAfter = presented.scheme === 'none' ? undefined : await gate.throttle.failed(request.ip);
  // The scheme is enough to debug a client; the credential itself never reaches a log.
  const answer = retryAfter === undefined ? '401' : '429 (too many failed sign-ins)';
  request.log.info({ scheme: presented.scheme }, `${presented.scheme === 'none' ? 'no credentials' : 'wrong credentials'}; ${answer}`);
  if (retryAfter === undefined) return false;
  tooManyFailures(reply, retryAfter);
  return true;
}

function tooManyFailures(reply: FastifyReply, retryAfter: number): void {
  reply
    .code(429)
    .header('retry-after', String(retryAfter))
    .send({ error: 'too_many_failures', message: `too many failed sign-ins from this address; try again in ${retryAfter} s` });
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

/** For routes that need a client when none is configured: say so instead of pretending they do not exist. */
export function disabledWithoutClients(_request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(503).send({
    error: 'api_disabled',
    message: 'no API client is configured, so the batch API and the queue dashboard are off; set API_TOKEN (32+ characters) or API_CLIENTS_FILE and restart',
  });
}

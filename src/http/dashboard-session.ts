// A dashboard sign-in that survives the page's own requests. A browser sends credentials typed into
// a URL (http://user:token@host/admin/queues) with the page and its scripts, but `fetch` refuses any
// URL that carries credentials, and the page's relative URLs inherit them: Bull Board's UI then
// stays on "Loading". So a signed-in page request also gets a session cookie, and a tiny script at
// the top of the page reloads it at the same address without the credentials; the cookie carries on.
//
// The cookie is not the token: it is the client's name, an expiry time and an HMAC keyed by the
// server's session secret (session-secret.ts) over both and the client's token digest. So it expires
// by itself, cannot be turned back into the token, cannot be made from anything the clients file
// holds, and dies when the client's token changes, the client is removed or the secret is rotated.
// The role is looked up at each request, so a changed role takes effect at once.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ClientDirectory } from '../access/directory.ts';
import type { ApiClient } from '../access/roles.ts';
import { type Clock, systemClock } from '../support/clock.ts';
import type { SessionSecret } from './session-secret.ts';

export const SESSION_COOKIE = 'classroom_sync_dashboard';
export const SESSION_TTL_SECONDS = 12 * 3600;

export interface DashboardSession {
  /** A Set-Cookie value for a fresh session of this client, scoped to `path`; undefined while there is no secret to sign it with. */
  issue(client: ApiClient, path: string, secure: boolean): Promise<string | undefined>;
  /** The client whose unexpired session the request's Cookie header holds, if any. */
  verify(cookieHeader: string | undefined): Promise<ApiClient | undefined>;
}

/** `clock` (epoch ms) dates each session's expiry and tells whether it has passed. */
export function createDashboardSession(directory: ClientDirectory, secret: SessionSecret, clock: Pick<Clock, 'now'> = systemClock): DashboardSession {
  const sign = (key: Buffer, digest: string, name: string, expires: string) =>
    createHmac('sha256', key).update(`dashboard-session:${name}:${expires}:${digest}`).digest('base64url');
  return {
    async issue(client, path, secure) {
      const known = directory.byName(client.name);
      if (!known) throw new Error(`client "${client.name}" is not in the directory; cannot issue its session`);
      const key = await secret();
      if (!key) return undefined;
      const expires = String(Math.floor(clock.now() / 1000) + SESSION_TTL_SECONDS);
      const attributes = [`Path=${path}`, `Max-Age=${SESSION_TTL_SECONDS}`, 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])];
      return [`${SESSION_COOKIE}=${client.name}.${expires}.${sign(key, known.digest, client.name, expires)}`, ...attributes].join('; ');
    },
    async verify(cookieHeader) {
      const value = cookieValue(cookieHeader, SESSION_COOKIE);
      const [, name, expires, signature] = /^([A-Za-z0-9_.-]{1,64})\.(\d{1,12})\.([\w-]{43})$/.exec(value ?? '') ?? [];
      if (name === undefined || expires === undefined || signature === undefined || Number(expires) * 1000 <= clock.now()) return undefined;
      const known = directory.byName(name);
      const key = known && (await secret());
      if (!known || !key) return undefined;
      return timingSafeEqual(Buffer.from(signature), Buffer.from(sign(key, known.digest, name, expires))) ? known.client : undefined;
    },
  };
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Served as the first script of every dashboard page: if the address holds credentials, load the
 * same address without them (the session cookie signs that request in). Chromium hides them from
 * `location.href` but keeps them in `document.URL`, against which relative URLs resolve.
 * `location.replace` keeps the address with credentials out of the history.
 */
export const DROP_URL_CREDENTIALS_JS = `(function () {
  var url = new URL(document.URL);
  if (url.username === '' && url.password === '') return;
  url.username = '';
  url.password = '';
  window.location.replace(url.href);
})();
`;

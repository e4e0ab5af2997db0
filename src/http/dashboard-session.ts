// A dashboard sign-in that survives the page's own requests. A browser sends credentials typed into
// a URL (http://user:token@host/admin/queues) with the page and its scripts, but `fetch` refuses any
// URL that carries credentials, and the page's relative URLs inherit them: Bull Board's UI then
// stays on "Loading". So a signed-in page request also gets a session cookie, and a tiny script at
// the top of the page reloads it at the same address without the credentials; the cookie carries on.
//
// The cookie is not the token: it is an expiry time and an HMAC of it keyed by the token, so it
// expires by itself, cannot be turned back into the token, and dies when the token changes.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'classroom_sync_dashboard';
export const SESSION_TTL_SECONDS = 12 * 3600;

export interface DashboardSession {
  /** A Set-Cookie value for a fresh session, scoped to `path`. */
  issue(path: string, secure: boolean): string;
  /** Whether the request's Cookie header holds a session this token issued and that has not expired. */
  verify(cookieHeader: string | undefined): boolean;
}

export function createDashboardSession(token: string, now: () => number = Date.now): DashboardSession {
  const sign = (expires: string) => createHmac('sha256', token).update(`dashboard-session:${expires}`).digest('base64url');
  return {
    issue(path, secure) {
      const expires = String(Math.floor(now() / 1000) + SESSION_TTL_SECONDS);
      const attributes = [`Path=${path}`, `Max-Age=${SESSION_TTL_SECONDS}`, 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])];
      return [`${SESSION_COOKIE}=${expires}.${sign(expires)}`, ...attributes].join('; ');
    },
    verify(cookieHeader) {
      const value = cookieValue(cookieHeader, SESSION_COOKIE);
      const [, expires, signature] = /^(\d{1,12})\.([\w-]{43})$/.exec(value ?? '') ?? [];
      if (expires === undefined || signature === undefined || Number(expires) * 1000 <= now()) return false;
      return timingSafeEqual(Buffer.from(signature), Buffer.from(sign(expires)));
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

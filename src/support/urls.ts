/**
 * A URL as a log line or a message may show it: scheme, host and path, without the user name,
 * password, query or fragment (a base URL may carry credentials in any of them).
 */
export function urlForLog(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '<unparseable url>';
  }
}

/** A connection URL with its password masked, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}

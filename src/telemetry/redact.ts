// What a span may say about a request or a command, decided here so that no secret reaches one.
// BullMQ's Redis commands carry job data (batch names, results, join links in return values) and a
// URL's query string may carry anything a remote or a client puts there: spans keep the command
// name, the path and the query's parameter names, never their values.

/** The statement of a Redis span: the command alone (`EVALSHA`, `BZPOPMIN`), never its arguments. */
export const redisCommandOnly = (command: string): string => command;

/** A URL without credentials and without query values: `https://host/p?full=…`. Unparsable input gives ''. */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return '';
  }
  url.username = '';
  url.password = '';
  const query = redactQuery(url.search);
  url.search = '';
  return `${url.toString()}${query}`;
}

/** A path with its query's values dropped: `/v1/batches?page=…`. */
export function redactPath(path: string): string {
  const at = path.indexOf('?');
  return at === -1 ? path : `${path.slice(0, at)}${redactQuery(path.slice(at))}`;
}

/** `?a=1&b=2` → `?a=…&b=…` (names kept: they tell which call it was); '' stays ''. */
export function redactQuery(search: string): string {
  const names = [...new URLSearchParams(search).keys()];
  return names.length === 0 ? '' : `?${names.map((name) => `${encodeURIComponent(name)}=…`).join('&')}`;
}

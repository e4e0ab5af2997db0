// What a log line may not show: credentials (censored) and join links (masked to a short prefix).
//
// pino's `redact` handles the keys a line names at its top level, and `headers.…`; one level deeper
// under any key ('*.apiKey', the censoring every line needs as defence in depth) is done here
// instead. pino runs a leading-wildcard redaction over every key of every line, parsing each
// wildcard path again each time: that was a sixth of everything a worker allocated per batch
// (bench/cost.ts). This scan allocates nothing unless a line holds a secret.

/** Keys whose values are credentials, wherever they appear in the first two levels of a line. */
const SECRET_KEYS = ['authorization', 'apiKey', 'xApiKey', 'apiToken', 'token', 'password', 'webhookSecret', 'secrets', 'sessionSecret'] as const;
/** Keys whose values are join links. */
const LINK_KEYS = ['joinLink', 'joinMagicLink'] as const;
/** Credential headers, under `headers` at the top level or one level down. */
const SECRET_HEADERS = ['authorization', 'x-api-key', 'webhook-signature'] as const;

const CENSORED = '[redacted]';

/** pino `redact` paths for the top level (looked up by key: free for lines without them). */
export const TOP_LEVEL_PATHS = [...SECRET_KEYS, ...LINK_KEYS, ...SECRET_HEADERS.map((h) => `headers["${h}"]`)];

/** Shows enough of a join link to tell two apart, never enough to join the class. */
export function maskJoinLink(link: string | null | undefined): string | null {
  if (!link) return link ?? null;
  let prefix: string;
  try {
    const url = new URL(link);
    prefix = `${url.protocol}//${url.host}/`;
  } catch {
    prefix = '';
  }
  return `${prefix}…(${link.length} chars)`;
}

/** pino's censor for the top-level paths: join links masked, anything else replaced. */
export function censor(value: unknown, path: string[]): unknown {
  const key = path[path.length - 1] ?? '';
  return (LINK_KEYS as readonly string[]).includes(key) && typeof value === 'string' ? maskJoinLink(value) : CENSORED;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** An object literal's, not a class instance's (a request, an error): those go to their serializers. */
function isPlain(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** `object` with its nested secrets censored: the same object when it holds none. */
function censorNested(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  const set = (key: string, value: unknown) => {
    copy ??= { ...object };
    copy[key] = value;
  };
  for (const key of SECRET_KEYS) if (Object.hasOwn(object, key)) set(key, CENSORED);
  for (const key of LINK_KEYS) {
    const value = object[key];
    if (Object.hasOwn(object, key)) set(key, typeof value === 'string' ? maskJoinLink(value) : CENSORED);
  }
  const headers = object.headers;
  if (isRecord(headers) && SECRET_HEADERS.some((h) => Object.hasOwn(headers, h))) {
    const censored = { ...headers };
    for (const h of SECRET_HEADERS) if (Object.hasOwn(censored, h)) censored[h] = CENSORED;
    set('headers', censored);
  }
  return copy ?? object;
}

/**
 * A line's fields with every secret one level down censored (pino `formatters.log`, and a child's
 * bindings: see `createLogger`).
 * Only object literals are looked into: pino hands this a line before its serializers run, and an
 * error or a request is reduced by its serializer to fields that hold no secret (`serializeError`,
 * fastify's request serializer).
 */
export function censorSecondLevel(fields: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    if (!isPlain(value)) continue;
    const censored = censorNested(value);
    if (censored === value) continue;
    copy ??= { ...fields };
    copy[key] = censored;
  }
  return copy ?? fields;
}

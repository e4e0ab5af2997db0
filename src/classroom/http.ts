// The HTTP layer under the four operations: ky, with every header of the spec's section 5, no
// retries (only the state machine knows whether sending again could create a second class), no
// throwing on HTTP errors (the answer is classified by its status and body), and our own deadline
// (`call.ts`: one signal for headers and body alike).
//
// ky sends through undici's `request` (its `fetch` option), not the global fetch: fetch's web
// streams and per-request objects made three small JSON calls cost a worker more CPU than all of
// its PostgreSQL and Redis work (bench/cost.ts). undici is the client Node's own fetch is built
// on, so connections, keep-alive and errors are the same; a redirect is answered, not followed
// (fetch sent a redirected add-class on: as a GET, or after a 307 or 308 as a second POST). The body and the deadline reach undici
// through ky's documented hand-over of options it does not know to its `fetch`.
import ky, { type KyInstance, type Options } from 'ky';
import { request as undiciRequest } from 'undici';
import type { ClassroomSettings } from './settings.ts';

type Settings = ClassroomSettings;

export interface Send {
  method: 'GET' | 'POST' | 'PUT';
  /** Relative to the base URL. */
  path: string;
  json?: unknown;
  searchParams?: Record<string, string>;
  signal: AbortSignal;
}

/** What ky hands over to our fetch beside the Request: the options it does not know. */
interface Handover {
  sendBody?: string;
  deadline?: AbortSignal;
}

export type Http = (send: Send) => Promise<Response>;

export function createHttp(settings: Settings): Http {
  const http = ky.create({
    prefixUrl: settings.baseUrl,
    timeout: false,
    retry: 0,
    throwHttpErrors: false,
    headers: headersOf(settings),
    fetch: sendWithUndici as typeof fetch,
  });
  return (send) => request(http, send);
}

function request(http: KyInstance, send: Send): Promise<Response> {
  const handover: Handover = { deadline: send.signal, ...(send.json === undefined ? {} : { sendBody: JSON.stringify(send.json) }) };
  const query = send.searchParams ? `?${new URLSearchParams(send.searchParams)}` : '';
  return http(`${relative(send.path)}${query}`, { method: send.method, ...handover } as Options);
}

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * fetch for ky: the Request's URL, method and headers, with the body and deadline ky handed over,
 * sent by undici. The whole body is read under the deadline, then handed back as a Response.
 */
async function sendWithUndici(request: Request, handover: Handover = {}): Promise<Response> {
  const answer = await undiciRequest(request.url, {
    method: request.method as 'GET' | 'POST' | 'PUT',
    headers: Object.fromEntries(request.headers),
    ...(handover.sendBody === undefined ? {} : { body: handover.sendBody }),
    ...(handover.deadline ? { signal: handover.deadline } : {}),
  });
  const body = await answer.body.text();
  return new Response(NULL_BODY.has(answer.statusCode) ? null : body, { status: answer.statusCode, headers: headersOfAnswer(answer.headers) });
}

function headersOfAnswer(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const one of value) headers.append(name, one);
    else if (value !== undefined) headers.append(name, value);
  }
  return headers;
}

function headersOf(settings: Settings): Record<string, string> {
  const basic = Buffer.from(`${settings.userId}:${settings.apiKey}`).toString('base64');
  return {
    authorization: `Basic ${basic}`,
    'x-api-key': settings.xApiKey,
    'user-agent': settings.userAgent,
    [settings.namespaceHeader]: settings.namespace,
    accept: 'application/json',
    'content-type': 'application/json',
  };
}

/** ky's prefixUrl wants paths without a leading slash. */
function relative(path: string): string {
  return path.replace(/^\/+/, '');
}

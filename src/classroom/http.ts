// The HTTP layer under the four operations: ky, with every header of the spec's section 5, no
// retries (only the state machine knows whether sending again could create a second class), no
// throwing on HTTP errors (the answer is classified by its status and body), and our own deadline
// (`call.ts`: one signal for headers and body alike).
//
// ky builds a Request with a stream body and clones it for retries, even with retries off; for
// three small JSON calls per batch that was a third of the worker's CPU over bare fetch
// (bench/cost.ts). So the body and the deadline reach fetch directly, through ky's `fetch` option
// and its documented hand-over of options it does not know to that fetch.
import ky, { type KyInstance, type Options } from 'ky';
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
    fetch: sendDirect as typeof fetch,
  });
  return (send) => request(http, send);
}

function request(http: KyInstance, send: Send): Promise<Response> {
  const handover: Handover = { deadline: send.signal, ...(send.json === undefined ? {} : { sendBody: JSON.stringify(send.json) }) };
  const options = { method: send.method, ...(send.searchParams ? { searchParams: send.searchParams } : {}), ...handover } as Options;
  return http(relative(send.path), options);
}

/** fetch for ky: the Request's URL, method and headers, with the body and deadline ky handed over. */
function sendDirect(request: Request, handover: Handover = {}): Promise<Response> {
  return fetch(request.url, {
    method: request.method,
    headers: request.headers,
    ...(handover.sendBody === undefined ? {} : { body: handover.sendBody }),
    ...(handover.deadline ? { signal: handover.deadline } : {}),
  });
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

// The checks every remote call passes before anything else (spec section 5), with messages that
// name the failing credential or header, so a misconfigured client is easy to diagnose.
import type { IncomingHttpHeaders } from 'node:http';

export interface SandboxCredentials {
  userId: string;
  apiKey: string;
  xApiKey: string;
  userAgent: string;
  namespace: string;
  /** Lower-case header name, e.g. 'x-service-namespace' (spec) or 'x-wise-namespace' (live). */
  namespaceHeader: string;
}

export interface Refusal {
  status: number;
  message: string;
}

/** Namespace header names seen in the spec and in the live service. */
const KNOWN_NAMESPACE_HEADERS = ['x-service-namespace', 'x-wise-namespace'];

/** Undefined when the call may proceed; otherwise the 401/403 to answer. */
export function checkAuth(headers: IncomingHttpHeaders, creds: SandboxCredentials): Refusal | undefined {
  const basic = parseBasic(headers.authorization);
  if (basic === 'missing') return { status: 401, message: 'Authorization header missing: expected Basic credentials' };
  if (basic === 'malformed') {
    return { status: 401, message: 'Authorization header malformed: expected "Basic base64(userId:apiKey)" credentials' };
  }
  if (basic.userId !== creds.userId || basic.apiKey !== creds.apiKey) {
    return { status: 401, message: 'invalid credentials: user id or API key not recognised' };
  }
  if (headers['x-api-key'] === undefined) return { status: 403, message: 'x-api-key header missing' };
  if (headers['x-api-key'] !== creds.xApiKey) return { status: 403, message: 'x-api-key not recognised' };
  if (headers['user-agent'] !== creds.userAgent) {
    return { status: 403, message: 'user-agent not recognised: it must be the value issued to the integrator' };
  }
  return checkNamespace(headers, creds);
}

function checkNamespace(headers: IncomingHttpHeaders, creds: SandboxCredentials): Refusal | undefined {
  const expected = creds.namespaceHeader;
  const value = headers[expected];
  if (value === creds.namespace) return undefined;
  if (value !== undefined) return { status: 403, message: `${expected} header does not match the namespace issued` };
  const other = KNOWN_NAMESPACE_HEADERS.find((h) => h !== expected && headers[h] !== undefined);
  const hint = other ? `; the request sent ${other} instead, but this service expects ${expected}` : '';
  return { status: 403, message: `${expected} header missing${hint}` };
}

export function parseBasic(header: string | undefined): { userId: string; apiKey: string } | 'missing' | 'malformed' {
  if (header === undefined || header === '') return 'missing';
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return 'malformed';
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'malformed';
  return { userId: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
}

// API_TOKEN, API_CLIENTS_FILE, DASHBOARD_SESSION_SECRET and TRUST_PROXY: who may call the HTTP
// surface, what the dashboard's session cookies are signed with, and which proxies in front of it to
// believe about the caller's address and protocol.
import { isIP } from 'node:net';
import { z } from 'zod';
import { type ClientEntry, readClientsFile } from './clients-file.ts';
import { tokenDigest, tokenProblem } from './tokens.ts';

/** Fastify's `trustProxy`: no proxy, every proxy, so many hops, or these addresses and networks. */
export type TrustProxy = boolean | number | string[];

const trustProxy = z.string().transform((value, ctx): TrustProxy => {
  const v = value.trim();
  if (v === 'true' || v === 'false') return v === 'true';
  if (/^\d{1,2}$/.test(v)) return Number(v);
  const parts = v.split(',').map((part) => part.trim());
  const bad = parts.find((part) => !isAddressOrNetwork(part));
  if (bad === undefined) return parts;
  ctx.addIssue({
    code: 'custom',
    message: `must be true, false, a number of proxy hops, or proxy addresses and networks separated by commas (e.g. 10.0.0.0/8,127.0.0.1); "${bad}" is none of them`,
  });
  return z.NEVER;
});

function isAddressOrNetwork(part: string): boolean {
  const [address = '', bits, ...rest] = part.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}

/** A secret with a token's rules: 32+ characters, no spaces, not the documentation's placeholder. */
const secret = z.string().superRefine((value, ctx) => {
  const problem = tokenProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

export const accessEnv = {
  API_TOKEN: secret.optional(),
  API_CLIENTS_FILE: z.string().min(1).optional(),
  DASHBOARD_SESSION_SECRET: secret.optional(),
  TRUST_PROXY: trustProxy.default(false),
};

/** The name API_TOKEN's client goes by in logs. */
export const API_TOKEN_CLIENT = 'API_TOKEN';

export interface AccessSettings {
  /** API_TOKEN: one admin client. */
  readonly apiToken: string | undefined;
  /** API_CLIENTS_FILE, when set, and its clients. */
  readonly clientsFile: string | undefined;
  readonly fileClients: readonly ClientEntry[];
  /**
   * DASHBOARD_SESSION_SECRET: what session cookies are signed with. Unset, the fleet generates one
   * and keeps it in Redis (src/http/session-secret.ts).
   */
  readonly sessionSecret: string | undefined;
  readonly trustProxy: TrustProxy;
}

export type AccessResult = { ok: true; fileClients: ClientEntry[] } | { ok: false; problems: string[] };

export function readAccess(file: string | undefined): AccessResult {
  if (file === undefined) return { ok: true, fileClients: [] };
  const result = readClientsFile(file);
  return result.ok ? { ok: true, fileClients: result.clients } : result;
}

/** Every client the server accepts: the file's, and API_TOKEN as an admin. */
export function clientsOf(access: Pick<AccessSettings, 'apiToken' | 'fileClients'>): ClientEntry[] {
  const fromToken: ClientEntry[] = access.apiToken
    ? [{ name: API_TOKEN_CLIENT, role: 'admin', instituteIds: undefined, digest: tokenDigest(access.apiToken) }]
    : [];
  return [...access.fileClients, ...fromToken];
}

// API_CLIENTS_FILE: who may call the API and open the dashboard, each with a role and, optionally,
// the institutes it may reach. Every problem is named by client and field; no message repeats a
// token, so a secret in a mistyped field never reaches a terminal or a log.
import { z } from 'zod';
import { classroomFields as f } from '../classroom/settings.ts';
import { type EntryNaming, describeEntryIssue, readStructuredFile } from '../support/structured-file.ts';
import { ROLES, type Role, rolesWith } from './roles.ts';
import { isPlaceholderDigest, tokenDigest, tokenProblem } from './tokens.ts';

const clientName = z
  .string({ error: 'must be a name' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit');

const token = z.string({ error: 'must be a string' }).superRefine((value, ctx) => {
  const problem = tokenProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const tokenSha256 = z
  .string({ error: 'must be a string' })
  .regex(/^[0-9a-fA-F]{64}$/, 'must be the 64 hex digits of the token\'s SHA-256 (e.g. `printf %s "$TOKEN" | sha256sum`)')
  .refine((digest) => !isPlaceholderDigest(digest), 'is the SHA-256 of the placeholder from the documentation; generate a token with `openssl rand -hex 32`');

/**
 * The roles that open the queue dashboard (and /metrics with --metrics-auth). Both show every
 * institute's jobs, and the dashboard's actions (pause, clean, retry all) reach every institute at
 * once, so such a client cannot be limited to some institutes: one that says it is would see and
 * change more than the file grants. Refused, rather than quietly given less than its role.
 */
const STAFF_ROLES: readonly Role[] = rolesWith('dashboard:view');
const SCOPED_STAFF =
  `a client with the ${STAFF_ROLES.join(' or ')} role opens the queue dashboard and /metrics, which show and act on every institute, ` +
  'so it cannot be limited to some; leave instituteIds out, or give it the reader role (read these institutes) or the publisher role (publish and read them)';

const clientSchema = z
  .strictObject({
    name: clientName,
    token: token.optional(),
    tokenSha256: tokenSha256.optional(),
    role: z.enum(ROLES, { error: `must be one of ${ROLES.join(', ')}` }),
    instituteIds: z.array(f.instituteId).min(1, 'must list at least one institute (leave it out for every institute)').optional(),
  })
  .superRefine((entry, ctx) => {
    if ((entry.token === undefined) === (entry.tokenSha256 === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['token'], message: 'give exactly one of token and tokenSha256' });
    }
    if (entry.instituteIds !== undefined && STAFF_ROLES.includes(entry.role)) {
      ctx.addIssue({ code: 'custom', path: ['instituteIds'], message: SCOPED_STAFF });
    }
  });

export const MAX_CLIENTS = 1_000;

const NAMING: EntryNaming = { list: 'clients', noun: 'client', validName: (name) => clientName.safeParse(name).success };

const fileSchema = z.strictObject({
  clients: z.array(clientSchema).min(1, 'must list at least one client').max(MAX_CLIENTS, `must list at most ${MAX_CLIENTS} clients`),
});

/** A client as the server holds it: its token only as a digest. */
export interface ClientEntry {
  readonly name: string;
  readonly role: Role;
  readonly instituteIds: readonly string[] | undefined;
  /** Lower-case hex SHA-256 of the token. */
  readonly digest: string;
}

export type ClientsResult = { ok: true; clients: ClientEntry[] } | { ok: false; problems: string[] };

export function readClientsFile(path: string): ClientsResult {
  const file = readStructuredFile(path);
  if (!file.ok) return { ok: false, problems: [file.problem] };
  const parsed = fileSchema.safeParse(file.value);
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.map((issue) => describeEntryIssue(issue, file.value, NAMING)) };
  const clients = parsed.data.clients.map((c) => ({
    name: c.name,
    role: c.role,
    instituteIds: c.instituteIds,
    digest: c.tokenSha256?.toLowerCase() ?? tokenDigest(c.token ?? ''),
  }));
  const problems = duplicates(clients);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, clients };
}

/** Two clients with one name make logs ambiguous; two with one token make the role ambiguous. */
function duplicates(clients: ClientEntry[]): string[] {
  const problems: string[] = [];
  const names = new Map<string, number>();
  const digests = new Map<string, string>();
  clients.forEach((client, index) => {
    const sameName = names.get(client.name);
    if (sameName !== undefined) problems.push(`client "${client.name}" (clients[${index}]) name: is also the name of clients[${sameName}]`);
    names.set(client.name, index);
    const sameToken = digests.get(client.digest);
    if (sameToken !== undefined)
      problems.push(`client "${client.name}" (clients[${index}]) token: is also the token of client "${sameToken}"; give each client its own`);
    digests.set(client.digest, client.name);
  });
  return problems;
}

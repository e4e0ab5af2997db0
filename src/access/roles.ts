// Who may do what: an API client's role says which routes it may use, its institutes which batches.
// One table, read by the HTTP surface; docs/http-api.md "Who may do what" is the same table in words.

export const ROLES = ['publisher', 'reader', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** What a client may do on the HTTP surface. */
export type Capability =
  /** POST /v1/batches, for its institutes. */
  | 'publish'
  /** GET /v1/batches…, for its institutes. */
  | 'read'
  /** The queue dashboard, and /metrics with --metrics-auth: looking only. */
  | 'dashboard:view'
  /** The dashboard's actions: retry, promote, clean, pause, empty, obliterate, edit job data. */
  | 'dashboard:act';

const CAPABILITIES: Record<Role, readonly Capability[]> = {
  publisher: ['publish', 'read'],
  reader: ['read'],
  operator: ['read', 'dashboard:view'],
  admin: ['publish', 'read', 'dashboard:view', 'dashboard:act'],
};

/** An authenticated caller. `instituteIds` undefined: every institute. */
export interface ApiClient {
  readonly name: string;
  readonly role: Role;
  readonly instituteIds: readonly string[] | undefined;
}

export function may(client: ApiClient, capability: Capability): boolean {
  return CAPABILITIES[client.role].includes(capability);
}

/** Whether the client may see or publish for this institute. */
export function reaches(client: ApiClient, instituteId: string): boolean {
  return client.instituteIds === undefined || client.instituteIds.includes(instituteId);
}

/** The roles that hold a capability, for error messages ("needs the publisher or admin role"). */
export function rolesWith(capability: Capability): Role[] {
  return ROLES.filter((role) => CAPABILITIES[role].includes(capability));
}

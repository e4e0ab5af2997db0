// Finding the client a presented token belongs to. The token is hashed first and looked up by its
// SHA-256: the server never holds a file client's token, only its digest, and a lookup by digest
// says nothing about how close a guess came.
import type { ClientEntry } from './clients-file.ts';
import type { ApiClient } from './roles.ts';
import { tokenDigest } from './tokens.ts';

export interface ClientDirectory {
  /** The client whose token this is, or undefined. */
  byToken(token: string | undefined): ApiClient | undefined;
  /** The client of this name and its token's digest, which its dashboard session cookies are signed over. */
  byName(name: string): { client: ApiClient; digest: string } | undefined;
  readonly size: number;
}

export function createClientDirectory(entries: readonly ClientEntry[]): ClientDirectory {
  const byDigest = new Map<string, ApiClient>();
  const byName = new Map<string, { client: ApiClient; digest: string }>();
  for (const { digest, ...client } of entries) {
    byDigest.set(digest, client);
    byName.set(client.name, { client, digest });
  }
  return {
    byToken: (token) => (token ? byDigest.get(tokenDigest(token)) : undefined),
    byName: (name) => byName.get(name),
    size: entries.length,
  };
}

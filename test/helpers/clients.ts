// API clients files for tests: each client a role, a token of its own and, optionally, institutes.
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestClient {
  name: string;
  role: 'publisher' | 'reader' | 'operator' | 'admin';
  instituteIds?: string[];
  /** Written as its SHA-256 (`tokenSha256`) instead of the token. */
  hashed?: boolean;
}

export const tokenFor = (): string => randomBytes(24).toString('hex');

/** Writes the clients file (mode 0600); returns its path, each client's token, and how to remove it. */
export function writeClientsFile(clients: readonly TestClient[]): { path: string; tokens: Record<string, string>; remove(): void } {
  const tokens: Record<string, string> = {};
  const entries = clients.map(({ hashed, ...client }) => {
    const token = tokenFor();
    tokens[client.name] = token;
    return hashed ? { ...client, tokenSha256: createHash('sha256').update(token).digest('hex') } : { ...client, token };
  });
  const dir = mkdtempSync(join(tmpdir(), 'classroom-sync-clients-'));
  const path = join(dir, 'clients.json');
  writeFileSync(path, JSON.stringify({ clients: entries }, null, 2));
  chmodSync(path, 0o600);
  return { path, tokens, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

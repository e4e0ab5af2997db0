// Accounts files for tests: several accounts, each with credentials of its own and one institute.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestAccount {
  name: string;
  /** Its client-side limit (ratePerMinute); absent = CLASSROOM_RATE_LIMIT_PER_MINUTE. */
  ratePerMinute?: number;
  /** The institutes it serves; absent = its own one (`instituteOf(name)`). */
  instituteIds?: string[];
  /** Its own webhook endpoint (with `webhookSecret`). */
  webhookUrl?: string;
  webhookSecret?: string;
}

/** The institute a test account serves. */
export const instituteOf = (name: string): string => `inst-${name}`;

/** An account entry: distinct user id, API key (32 alphanumerics), x-api-key and namespace. */
export function accountEntry(account: TestAccount): Record<string, unknown> {
  const { name, ratePerMinute, instituteIds = [instituteOf(name)], webhookUrl, webhookSecret } = account;
  const letters = name.replace(/[^A-Za-z0-9]/g, '');
  return {
    name,
    instituteIds,
    userId: `user-${name}`,
    apiKey: `${letters}Key`.padEnd(32, '7').slice(0, 32),
    xApiKey: `x-api-key-${name}`,
    namespace: `ns-${name}`,
    userAgent: `VendorIntegrations/ns-${name}`,
    ...(ratePerMinute === undefined ? {} : { ratePerMinute }),
    ...(webhookUrl === undefined ? {} : { webhookUrl, webhookSecret }),
  };
}

/** Writes an accounts file into a directory of its own: its path (for CLASSROOM_ACCOUNTS_FILE), and how to remove it. */
export function writeAccountsFile(accounts: readonly TestAccount[]): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'classroom-sync-accounts-'));
  const path = join(dir, 'accounts.json');
  writeFileSync(path, JSON.stringify({ accounts: accounts.map(accountEntry) }, null, 2));
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

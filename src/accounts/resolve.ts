// Which accounts this deployment has, and which one is the default.
//
// Without CLASSROOM_ACCOUNTS_FILE there is one account, "default", made of the CLASSROOM_* settings,
// exactly as before accounts existed: it syncs batches of any institute. With the file, its accounts are the deployment's. The default
// account (the one that syncs batches sent without an institute) serves CLASSROOM_INSTITUTE_ID: a
// file account that lists it, or else the CLASSROOM_* settings as account "default". When
// CLASSROOM_INSTITUTE_ID is not set, the file's first account and its first institute are the default.
import type { ClassroomSettings } from '../classroom/settings.ts';
import { type FileAccount, readAccountsFile } from './file.ts';
import { type Account, DEFAULT_ACCOUNT } from './types.ts';

export interface AccountsSetup {
  accounts: Account[];
  defaultAccount: Account;
  /** Where batches sent without an institute go. */
  defaultInstituteId: string;
}

export interface AccountsInput {
  /** The CLASSROOM_* settings: the default account's, and every file account's fallbacks. */
  env: ClassroomSettings;
  /** Whether CLASSROOM_INSTITUTE_ID was set (not defaulted). */
  instituteExplicit: boolean;
  file: string | undefined;
}

export type AccountsResult = ({ ok: true } & AccountsSetup) | { ok: false; problems: string[] };

export function resolveAccounts(input: AccountsInput): AccountsResult {
  const envAccount: Account = { name: DEFAULT_ACCOUNT, instituteIds: [input.env.instituteId], classroom: input.env };
  if (input.file === undefined) {
    const only = { ...envAccount, anyInstitute: true };
    return { ok: true, accounts: [only], defaultAccount: only, defaultInstituteId: input.env.instituteId };
  }
  const read = readAccountsFile(input.file);
  if (!read.ok) return read;
  const accounts = read.accounts.map((entry) => fromFile(entry, input.env));
  const problems = conflicts(read.accounts);
  if (problems.length > 0) return { ok: false, problems };
  const first = accounts[0] as Account;
  if (!input.instituteExplicit) return { ok: true, accounts, defaultAccount: first, defaultInstituteId: first.classroom.instituteId };
  const serving = accounts.find((account) => account.instituteIds.includes(input.env.instituteId));
  if (serving) return { ok: true, accounts, defaultAccount: serving, defaultInstituteId: input.env.instituteId };
  if (accounts.some((account) => account.name === DEFAULT_ACCOUNT)) {
    return {
      ok: false,
      problems: [
        `no account in the file serves CLASSROOM_INSTITUTE_ID, so the CLASSROOM_* settings would form account "${DEFAULT_ACCOUNT}", but the file already has an account of that name: add the institute to one account's instituteIds, or rename that account`,
      ],
    };
  }
  return { ok: true, accounts: [...accounts, envAccount], defaultAccount: envAccount, defaultInstituteId: input.env.instituteId };
}

function fromFile(entry: FileAccount, env: ClassroomSettings): Account {
  const classroom: ClassroomSettings = {
    ...env,
    userId: entry.userId,
    apiKey: entry.apiKey,
    xApiKey: entry.xApiKey,
    namespace: entry.namespace,
    userAgent: entry.userAgent,
    instituteId: entry.instituteIds[0] as string,
    baseUrl: (entry.baseUrl ?? env.baseUrl).replace(/\/+$/, ''),
    rateLimitPerMinute: entry.ratePerMinute ?? env.rateLimitPerMinute,
    namespaceHeader: entry.namespaceHeader ?? env.namespaceHeader,
    addClassPath: entry.addClassPath ?? env.addClassPath,
    editClassMethod: entry.editClassMethod ?? env.editClassMethod,
  };
  const webhook = entry.webhookUrl && entry.webhookSecret ? { webhook: { url: entry.webhookUrl, secrets: entry.webhookSecret } } : {};
  return { name: entry.name, instituteIds: [...new Set(entry.instituteIds)], classroom, ...webhook };
}

/** Names used twice, an institute served twice, one key under two accounts. */
function conflicts(entries: readonly FileAccount[]): string[] {
  const problems: string[] = [];
  const names = new Map<string, number>();
  const institutes = new Map<string, string>();
  const keys = new Map<string, string>();
  entries.forEach((entry, index) => {
    const who = `account "${entry.name}" (accounts[${index}])`;
    const sameName = names.get(entry.name.toLowerCase());
    if (sameName !== undefined) problems.push(`${who} name: accounts[${sameName}] has the same name; names must be unique`);
    names.set(entry.name.toLowerCase(), index);
    for (const instituteId of new Set(entry.instituteIds)) {
      const owner = institutes.get(instituteId);
      if (owner !== undefined)
        problems.push(`${who} instituteIds: institute ${instituteId} is already served by account "${owner}"; each institute has one account`);
      else institutes.set(instituteId, entry.name);
    }
    const credentials = `${entry.userId}\u0000${entry.apiKey}`;
    const sameKey = keys.get(credentials);
    if (sameKey !== undefined) {
      problems.push(`${who} apiKey: account "${sameKey}" has the same user id and API key; list both accounts' institutes under one account`);
    } else keys.set(credentials, entry.name);
  });
  return problems;
}

// The accounts file (CLASSROOM_ACCOUNTS_FILE): JSON or YAML, one entry per account. Every problem
// is named by account and field; no message repeats a value from the file, so a secret in a
// mistyped field never reaches a terminal or a log.
import { z } from 'zod';
import { classroomFields as f } from '../classroom/settings.ts';
import { type EntryNaming, describeEntryIssue, readStructuredFile } from '../support/structured-file.ts';
import { unpaired, webhookFields } from '../webhooks/settings.ts';

const accountName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/, 'must be 1 to 40 letters, digits, "_" or "-", starting with a letter or digit (it becomes a metric label)');

const accountSchema = z
  .strictObject({
    name: accountName,
    instituteIds: z.array(f.instituteId).min(1, 'must list at least one institute'),
    userId: f.userId,
    apiKey: f.apiKey,
    xApiKey: f.xApiKey,
    namespace: f.namespace,
    userAgent: f.userAgent,
    // These fall back to the CLASSROOM_* settings.
    baseUrl: f.baseUrl.optional(),
    ratePerMinute: z
      .number({ error: 'must be a number of calls per minute' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1_000_000, 'must be at most 1000000')
      .optional(),
    namespaceHeader: f.namespaceHeader.optional(),
    addClassPath: f.addClassPath.optional(),
    editClassMethod: f.editClassMethod.optional(),
    // Where this account's institutes' webhook messages go, in place of WEBHOOK_URL.
    webhookUrl: webhookFields.url.optional(),
    webhookSecret: webhookFields.secrets.optional(),
  })
  .superRefine((entry, ctx) => {
    const missing = unpaired(entry.webhookUrl, entry.webhookSecret, { url: 'webhookUrl', secrets: 'webhookSecret' });
    if (missing) ctx.addIssue({ code: 'custom', path: [missing.field], message: missing.reason });
  });

/** Enough for any integrator; bounds the `account` metric label. */
export const MAX_ACCOUNTS = 200;

const NAMING: EntryNaming = { list: 'accounts', noun: 'account', validName: (name) => accountName.safeParse(name).success };

const fileSchema = z.strictObject({
  accounts: z.array(accountSchema).min(1, 'must list at least one account').max(MAX_ACCOUNTS, `must list at most ${MAX_ACCOUNTS} accounts`),
});

export type FileAccount = z.output<typeof accountSchema>;

export type FileResult = { ok: true; accounts: FileAccount[] } | { ok: false; problems: string[] };

/** Reads and validates the file (see src/support/structured-file.ts). */
export function readAccountsFile(path: string): FileResult {
  const file = readStructuredFile(path);
  if (!file.ok) return { ok: false, problems: [file.problem] };
  const parsed = fileSchema.safeParse(file.value);
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.map((issue) => describeEntryIssue(issue, file.value, NAMING)) };
  return { ok: true, accounts: parsed.data.accounts };
}

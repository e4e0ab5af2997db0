// The accounts file (CLASSROOM_ACCOUNTS_FILE): JSON or YAML, one entry per account. Every problem
// is named by account and field; no message repeats a value from the file, so a secret in a
// mistyped field never reaches a terminal or a log.
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { classroomFields as f } from '../classroom/settings.ts';
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

const fileSchema = z.strictObject({
  accounts: z.array(accountSchema).min(1, 'must list at least one account').max(MAX_ACCOUNTS, `must list at most ${MAX_ACCOUNTS} accounts`),
});

export type FileAccount = z.output<typeof accountSchema>;

export type FileResult = { ok: true; accounts: FileAccount[] } | { ok: false; problems: string[] };

/** Reads and validates the file; JSON is read as YAML (it is a subset), so both give line numbers. */
export function readAccountsFile(path: string): FileResult {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'unreadable');
    return { ok: false, problems: [`cannot read ${path}: ${why}`] };
  }
  const document = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  const syntax = document.errors[0];
  if (syntax) {
    const { line, column } = lineAndColumn(text, syntax.pos[0]);
    return { ok: false, problems: [`${path} is not valid JSON or YAML at line ${line}, column ${column}: ${syntax.message}`] };
  }
  const parsed = fileSchema.safeParse(document.toJS());
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.map((issue) => describeIssue(issue, document.toJS())) };
  return { ok: true, accounts: parsed.data.accounts };
}

/** `account "north" (accounts[1]) apiKey: must be …`, or `accounts[1] name: …` for an unnamed one. */
function describeIssue(issue: z.core.$ZodIssue, raw: unknown): string {
  const [top, index, ...field] = issue.path;
  if (top !== 'accounts' || typeof index !== 'number') return `${issue.path.join('.') || 'the file'}: ${issue.message}`;
  const entry = (raw as { accounts?: unknown[] }).accounts?.[index];
  const name = entry && typeof entry === 'object' ? (entry as { name?: unknown }).name : undefined;
  const who = typeof name === 'string' && accountName.safeParse(name).success ? `account "${name}" (accounts[${index}])` : `accounts[${index}]`;
  const where = field.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('');
  return `${who}${where ? ` ${where}` : ''}: ${issue.message}`;
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

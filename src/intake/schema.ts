// The batch-created event: what the integrator's system tells us about a new batch.
import { z } from 'zod';

const RESERVED_EXTRA = new Set(['_id', 'classId', 'joinMagicLink', 'namespace', 'userId']);
/** An unpaired UTF-16 surrogate: no UTF-8 encoding exists for it, and Postgres refuses it in jsonb. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** In JSON.stringify output: an escaped NUL or lone surrogate (jsonb stores neither), the backslash itself not escaped. */
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;
const printable = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    // eslint-disable-next-line no-control-regex
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point of this rule
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
    .refine((value) => !LONE_SURROGATE.test(value), 'must be valid Unicode text (no unpaired surrogates)');

export const MAX_EXTRA_BYTES = 8_192;

export const batchCreatedSchema = z
  .looseObject({
    batchId: printable(200),
    name: printable(200),
    subject: printable(200),
    instituteId: z
      .string()
      .regex(/^[A-Za-z0-9._~-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_", "~" or "-"')
      // The client never puts "." or ".." in a URL path (isSafeId), so such a batch could not be settled.
      .refine((id) => id !== '.' && id !== '..', 'must not be "." or ".."')
      .optional(),
  })
  .transform((event, ctx) => {
    const { batchId, name, subject, instituteId, ...extra } = event;
    let total = 1;
    let largest = { key: '', size: -1 };
    for (const [key, value] of Object.entries(extra)) {
      const measured = RESERVED_EXTRA.has(key) ? { problem: 'is set by the remote service and cannot be sent' } : measureExtra(key, value);
      if ('problem' in measured) ctx.addIssue({ code: 'custom', path: [key], message: measured.problem });
      else {
        total += measured.size + 1;
        if (measured.size > largest.size) largest = { key, size: measured.size };
      }
    }
    if (total > MAX_EXTRA_BYTES) {
      // Name the biggest field: that is the one to shorten.
      ctx.addIssue({
        code: 'custom',
        path: [largest.key],
        message: `makes the extra class fields ${total} characters of JSON; they must total at most ${MAX_EXTRA_BYTES} bytes`,
      });
    }
    return { batchId, name, subject, instituteId, extra };
  });

/**
 * An extra field's share of the JSON sent on add-class, or why it cannot be recorded: one such
 * field must fail its own event, not the insert of every event published with it.
 */
function measureExtra(key: string, value: unknown): { size: number } | { problem: string } {
  if (key.includes('\u0000') || LONE_SURROGATE.test(key)) return { problem: 'field name must not contain NUL characters or unpaired surrogates' };
  const polluting = pollutingKey(key, value);
  if (polluting)
    return { problem: `must not contain the key ${polluting}: JSON parsers refuse it (prototype pollution), so the remote would reject the class` };
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    // A RangeError (nested deeper than the stack) or a value that is not plain data.
    return { problem: 'cannot be sent as JSON: nested too deeply or not plain data' };
  }
  if (json !== undefined && UNSTORABLE_ESCAPE.test(json)) return { problem: 'must not contain NUL characters or unpaired surrogates' };
  return { size: JSON.stringify(key).length + 1 + (json?.length ?? 0) };
}

/**
 * `"__proto__"`, or `"constructor"` holding `"prototype"`, anywhere in an extra field (its own key
 * included): what secure JSON parsers (Fastify's among them) refuse as prototype pollution. Names
 * the path, or undefined when there is none.
 */
function pollutingKey(key: string, value: unknown, path = key, depth = 0): string | undefined {
  if (key === '__proto__') return JSON.stringify(path);
  if (value === null || typeof value !== 'object' || depth > 64) return undefined;
  if (key === 'constructor' && !Array.isArray(value) && Object.hasOwn(value, 'prototype')) return JSON.stringify(`${path}.prototype`);
  for (const [inner, child] of Object.entries(value)) {
    const found = pollutingKey(inner, child, `${path}.${inner}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

export type BatchCreatedInput = z.input<typeof batchCreatedSchema>;
export interface BatchCreated {
  batchId: string;
  name: string;
  subject: string;
  instituteId: string;
  /** Extra class fields sent as they are on add-class. */
  extra: Record<string, unknown>;
}

export interface FieldProblem {
  field: string;
  reason: string;
}

export class InvalidEventError extends Error {
  override readonly name = 'InvalidEventError';
  constructor(readonly problems: FieldProblem[]) {
    super(`invalid batch-created event: ${problems.map((p) => `${p.field} ${p.reason}`).join('; ')}`);
  }
}

export type ParseResult = { ok: true; event: BatchCreated } | { ok: false; problems: FieldProblem[] };

/** Where an event without `instituteId` goes, and (with several accounts) which institutes are served at all. */
export interface IntakeDefaults {
  instituteId: string;
  /** When given, an institute outside it is refused: no account could sync its batches. */
  servedInstitutes?: ReadonlySet<string> | undefined;
}

export function parseBatchCreated(input: unknown, defaults: string | IntakeDefaults): ParseResult {
  const { instituteId: defaultInstituteId, servedInstitutes } =
    typeof defaults === 'string' ? { instituteId: defaults, servedInstitutes: undefined } : defaults;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, problems: [{ field: '(event)', reason: 'must be a JSON object' }] };
  }
  const result = batchCreatedSchema.safeParse(input);
  if (!result.success) {
    return {
      ok: false,
      problems: result.error.issues.map((issue) => ({
        field: issue.path.length ? issue.path.join('.') : '(event)',
        reason: issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message,
      })),
    };
  }
  const { instituteId, ...rest } = result.data;
  if (instituteId !== undefined && servedInstitutes && !servedInstitutes.has(instituteId)) {
    const reason = `is not served by any account: add it to an account's instituteIds in CLASSROOM_ACCOUNTS_FILE (or leave instituteId out for ${defaultInstituteId})`;
    return { ok: false, problems: [{ field: 'instituteId', reason }] };
  }
  return { ok: true, event: { ...rest, instituteId: instituteId ?? defaultInstituteId } };
}

// The batch-created event: what the integrator's system tells us about a new batch.
import { z } from 'zod';

const RESERVED_EXTRA = new Set(['_id', 'classId', 'joinMagicLink', 'namespace', 'userId']);
const printable = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    // eslint-disable-next-line no-control-regex
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters');

export const MAX_EXTRA_BYTES = 8_192;

export const batchCreatedSchema = z
  .looseObject({
    batchId: printable(200),
    name: printable(200),
    subject: printable(200),
    instituteId: z
      .string()
      .regex(/^[A-Za-z0-9._~-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_", "~" or "-"')
      .optional(),
  })
  .transform((event, ctx) => {
    const { batchId, name, subject, instituteId, ...extra } = event;
    for (const key of Object.keys(extra)) {
      if (RESERVED_EXTRA.has(key)) ctx.addIssue({ code: 'custom', path: [key], message: 'is set by the remote service and cannot be sent' });
    }
    if (JSON.stringify(extra).length > MAX_EXTRA_BYTES) {
      ctx.addIssue({ code: 'custom', path: [], message: `extra class fields must total at most ${MAX_EXTRA_BYTES} bytes of JSON` });
    }
    return { batchId, name, subject, instituteId, extra };
  });

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

export function parseBatchCreated(input: unknown, defaultInstituteId: string): ParseResult {
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
  return { ok: true, event: { ...rest, instituteId: instituteId ?? defaultInstituteId } };
}

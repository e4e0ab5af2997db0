// Request bodies of the remote operations, with 400 messages that name the field ("name: required").
import { z } from 'zod';
import { CLASS_TYPES } from './store.ts';

const text = (max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'required' : 'must be a string') })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);

const objectError = { error: 'must be a JSON object' };

export const addClassBody = z.looseObject(
  {
    name: text(200),
    subject: text(200),
    instituteId: text(128),
    classType: z.enum(CLASS_TYPES, { error: `must be one of ${CLASS_TYPES.join(', ')}` }).optional(),
  },
  objectError,
);

/** A field edit-class may not change: present at all, it is refused ("instituteId: cannot be edited"). */
const fixed = z.never({ error: 'cannot be edited' }).optional();

/** Any other field is an extra field of the class, merged over its extras (as add-class stores them). */
export const editClassBody = z.looseObject(
  {
    classId: text(128),
    enableJoinMagicLink: z.boolean({ error: 'must be true or false' }).optional(),
    name: text(200).optional(),
    subject: text(200).optional(),
    archived: z.boolean({ error: 'must be true or false' }).optional(),
    instituteId: fixed,
    _id: fixed,
    joinMagicLink: fixed,
  },
  objectError,
);

export const manualClassBody = z.strictObject(
  {
    name: text(200),
    subject: text(200).default('Sandbox'),
    instituteId: text(128).optional(),
    classType: z.enum(CLASS_TYPES).optional(),
    archived: z.boolean().optional(),
    pending: z.boolean().optional(),
    /** Creates this many classes with the same name (benchmarks). */
    count: z.number().int().min(1).max(1_000_000).default(1),
  },
  objectError,
);

export type ParseResult<T> = { ok: true; value: T } | { ok: false; message: string };

/** Parses, or returns the first problem as "<field>: <problem>". */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): ParseResult<T> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.join('.') : 'body';
  return { ok: false, message: `${field}: ${issue?.message ?? 'invalid'}` };
}

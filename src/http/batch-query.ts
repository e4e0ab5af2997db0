// Reading mappings for the API: query validation, and pages in id order behind an opaque cursor.
import { z } from 'zod';
import { BATCH_STATES, type Db } from '../mapping/index.ts';
import { listBatches } from '../read-model/index.ts';

export const MAX_PAGE = 500;
export const DEFAULT_PAGE = 50;

const instituteId = z.string().regex(/^[A-Za-z0-9._~-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_", "~" or "-"');

/** A cursor is the base64url of the last id on the previous page; clients must treat it as opaque. */
export function encodeCursor(id: number): string {
  return Buffer.from(`id:${id}`, 'utf8').toString('base64url');
}

const cursor = z.string().transform((value, ctx) => {
  const match = /^id:(\d{1,15})$/.exec(Buffer.from(value, 'base64url').toString('utf8'));
  if (!match) {
    ctx.addIssue({ code: 'custom', message: 'is not a cursor this API issued (pass back nextCursor unchanged)' });
    return z.NEVER;
  }
  return Number(match[1]);
});

export const listQuerySchema = z.strictObject({
  state: z.enum(BATCH_STATES, { error: `must be one of ${BATCH_STATES.join(', ')}` }).optional(),
  limit: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(MAX_PAGE, `must be at most ${MAX_PAGE}`)
    .default(DEFAULT_PAGE),
  cursor: cursor.optional(),
  instituteId: instituteId.optional(),
});
export type ListQuery = z.output<typeof listQuerySchema>;

export const oneQuerySchema = z.strictObject({ instituteId: instituteId.optional() });
export const batchIdParamSchema = z.object({ batchId: z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters') });

export interface Problem {
  path: string;
  reason: string;
}

/** Zod issues as `{ path, reason }`, naming unknown query parameters one by one. */
export function problemsOf(error: z.ZodError): Problem[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: key, reason: 'is not a known parameter' }));
    const reason = issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message;
    return [{ path: issue.path.length ? issue.path.join('.') : '(query)', reason }];
  });
}

/** A page of `query`, within `instituteIds` (a client's scope; undefined: every institute). */
export async function listMappings(db: Db, query: ListQuery, instituteIds?: readonly string[]) {
  const filter = { state: query.state, instituteId: query.instituteId, instituteIds };
  const page = await listBatches(db, filter, { limit: query.limit, afterId: query.cursor });
  return { rows: page.rows, nextCursor: page.nextAfterId === null ? null : encodeCursor(page.nextAfterId) };
}

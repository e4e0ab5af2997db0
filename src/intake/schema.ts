// Batch events: what the integrator's system tells us about a batch (created, then updated or cancelled).
import { z } from 'zod';
import { CLASS_FIELDS, type ClassFields, type StoredEvent, classFieldsOf, classFieldsSchema, copyField, withoutClassFields } from '../mapping/index.ts';
import { LONE_SURROGATE, printable } from '../support/text.ts';

const RESERVED_EXTRA = new Set(['_id', 'classId', 'joinMagicLink', 'namespace', 'userId', 'archived', 'enableJoinMagicLink']);
/** In JSON.stringify output: an escaped NUL or lone surrogate (jsonb stores neither), the backslash itself not escaped. */
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

export const MAX_EXTRA_BYTES = 8_192;

const instituteIdField = z
  .string()
  .regex(/^[A-Za-z0-9._~-]{1,128}$/, 'must be 1-128 letters, digits, ".", "_", "~" or "-"')
  // The client never puts "." or ".." in a URL path (isSafeId), so such a batch could never be synced.
  .refine((id) => id !== '.' && id !== '..', 'must not be "." or ".."')
  .optional();

/** The event types every intake path takes; an event without `type` is `batch.created`. */
export const EVENT_TYPES = ['batch.created', 'batch.updated', 'batch.cancelled'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Fields every event may carry that are never extra class fields (problems are listed in this order). */
const versionField = z
  .number({ error: 'must be a positive integer' })
  .int('must be a positive integer')
  .positive('must be a positive integer')
  .max(Number.MAX_SAFE_INTEGER, `must be at most ${Number.MAX_SAFE_INTEGER}`)
  .optional();
const typeField = z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` }).optional();
const envelope = { instituteId: instituteIdField, type: typeField, version: versionField };

/** The class fields (declared in src/db/schema/class-fields.ts): a created event carries them all, a change only those it changes. */
const classFields = classFieldsSchema.shape;
/** What a schema gives before `parseBatchEvent` fills in the default institute. */
type Parsed<T> = Omit<T, 'instituteId'> & { instituteId: string | undefined };

export const batchCreatedSchema = z.looseObject({ batchId: printable(200), ...classFields, ...envelope }).transform((event, ctx): Parsed<BatchCreated> => {
  const { type: _type, version, batchId, instituteId, ...own } = event;
  return { batchId, ...classFieldsOf(own), instituteId, version, extra: extraFields(withoutClassFields(own), ctx) };
});

const batchUpdatedSchema = z
  .looseObject({ batchId: printable(200), ...classFieldsSchema.partial().shape, ...envelope })
  .transform((event, ctx): Parsed<BatchUpdated> => {
    const { type: _type, version, batchId, instituteId, ...own } = event;
    const extra = extraFields(withoutClassFields(own), ctx);
    const changes: Partial<ClassFields> = {};
    for (const field of CLASS_FIELDS) copyField(changes, own, field);
    if (Object.keys(changes).length === 0 && Object.keys(extra).length === 0) {
      ctx.addIssue({ code: 'custom', path: [], message: `a batch.updated event must change ${CLASS_FIELDS.join(', ')} or an extra class field` });
    }
    return { type: 'batch.updated' as const, batchId, instituteId, version, extra, ...changes };
  });

/** A cancellation names its batch; the class fields it may carry are not used. */
const batchCancelledSchema = z.looseObject({ batchId: printable(200), ...envelope }).transform(({ batchId, instituteId, version }) => ({
  type: 'batch.cancelled' as const,
  batchId,
  instituteId,
  version,
}));

/** The extra class fields of an event (every field not named above), each checked and their total size bounded. */
function extraFields(rest: Record<string, unknown>, ctx: z.RefinementCtx): Record<string, unknown> {
  let total = 1;
  let largest = { key: '', size: -1 };
  for (const [key, value] of Object.entries(rest)) {
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
  return rest;
}

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
/** What `publishBatchUpdated` takes: any field besides these is an extra class field to set. */
export type BatchUpdatedInput = { batchId: string; instituteId?: string; version?: number } & Partial<ClassFields> & Record<string, unknown>;
export type BatchCancelledInput = { batchId: string; instituteId?: string; version?: number };
/** A batch-created event as parsed: the stored event and the integrator's version of the batch, which grows with each change (optional). */
export type BatchCreated = StoredEvent & { version?: number | undefined };
/** New values for a recorded batch: at least one class field or extra field (extra fields are merged over those recorded). */
export type BatchUpdated = Partial<ClassFields> &
  Pick<StoredEvent, 'batchId' | 'instituteId' | 'extra'> & {
    type: 'batch.updated';
    version?: number | undefined;
  };
export interface BatchCancelled {
  type: 'batch.cancelled';
  batchId: string;
  instituteId: string;
  version?: number | undefined;
}
/** Any event of a batch, as intake parsed it: a created event carries no `type`. */
export type BatchEvent = BatchCreated | BatchUpdated | BatchCancelled;

export const typeOf = (event: BatchEvent): EventType => ('type' in event ? event.type : 'batch.created');

export interface FieldProblem {
  field: string;
  reason: string;
}

export class InvalidEventError extends Error {
  override readonly name = 'InvalidEventError';
  constructor(readonly problems: FieldProblem[]) {
    super(`invalid batch event: ${problems.map((p) => `${p.field} ${p.reason}`).join('; ')}`);
  }
}

export type ParseResult = { ok: true; event: BatchEvent } | { ok: false; problems: FieldProblem[] };

/** Where an event without `instituteId` goes, and (with several accounts) which institutes are served at all. */
export interface IntakeDefaults {
  instituteId: string;
  /** When given, an institute outside it is refused: no account could sync its batches. */
  servedInstitutes?: ReadonlySet<string> | undefined;
}

const SCHEMAS = { 'batch.created': batchCreatedSchema, 'batch.updated': batchUpdatedSchema, 'batch.cancelled': batchCancelledSchema };

/** Parses any batch event (created, updated or cancelled): the event, or every problem by field. */
export function parseBatchEvent(input: unknown, defaults: string | IntakeDefaults): ParseResult {
  const { instituteId: defaultInstituteId, servedInstitutes } =
    typeof defaults === 'string' ? { instituteId: defaults, servedInstitutes: undefined } : defaults;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, problems: [{ field: '(event)', reason: 'must be a JSON object' }] };
  }
  const type = (input as { type?: unknown }).type;
  const schema = SCHEMAS[(EVENT_TYPES as readonly unknown[]).includes(type) ? (type as EventType) : 'batch.created'];
  const result = schema.safeParse(input);
  if (!result.success) {
    return {
      ok: false,
      problems: result.error.issues.map((issue) => ({
        field: issue.path.length ? issue.path.join('.') : '(event)',
        reason: issue.code === 'invalid_type' && valueAt(input, issue.path) === undefined ? 'is required' : issue.message,
      })),
    };
  }
  const { instituteId, ...rest } = result.data as BatchEvent & { instituteId?: string };
  if (instituteId !== undefined && servedInstitutes && !servedInstitutes.has(instituteId)) {
    const reason = `is not served by any account: add it to an account's instituteIds in CLASSROOM_ACCOUNTS_FILE (or leave instituteId out for ${defaultInstituteId})`;
    return { ok: false, problems: [{ field: 'instituteId', reason }] };
  }
  return { ok: true, event: { ...rest, instituteId: instituteId ?? defaultInstituteId } as BatchEvent };
}

/** The input's value at a problem's path: absent means "is required", anything else gets the rule's own message. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  return value;
}

/** `parseBatchEvent` under its first name: it takes every event type, `batch.created` by default. */
export const parseBatchCreated = parseBatchEvent;

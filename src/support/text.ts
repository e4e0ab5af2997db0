// Text the remote service and PostgreSQL both take: a zod rule for a printable, bounded field.
import { z } from 'zod';

/** An unpaired UTF-16 surrogate: no UTF-8 encoding exists for it, and Postgres refuses it in jsonb. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Trimmed, non-empty, at most `max` characters, without control characters or unpaired surrogates. */
export const printable = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    // eslint-disable-next-line no-control-regex
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point of this rule
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
    .refine((value) => !LONE_SURROGATE.test(value), 'must be valid Unicode text (no unpaired surrogates)');

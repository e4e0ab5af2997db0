// Name rewriting: a hosted API may not keep a class name byte for byte (field notes, "Names are
// not kept byte for byte"). The sandbox can trim, collapse, re-case and shorten names on add-class
// so the sync's name matching is tested against a remote that does.
import { z } from 'zod';
import { NAME_CASES } from './vocabulary.ts';

export { NAME_CASES };

export const MAX_NAME_LENGTH = 1_000;

export const nameRewriteSchema = z
  .strictObject({
    /** Unicode NFC, every run of whitespace collapsed to one space, trimmed. */
    normalize: z.boolean({ error: 'must be true or false' }).optional(),
    case: z.enum(NAME_CASES, { error: `must be one of ${NAME_CASES.join(', ')}` }).optional(),
    /** Keep at most this many code points (then trim trailing whitespace). */
    maxLength: z
      .number({ error: 'must be a number' })
      .int('must be an integer')
      .min(1, 'must be at least 1')
      .max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH}`)
      .optional(),
    /** A cut name ends in "…" (counted within maxLength). */
    ellipsis: z.boolean({ error: 'must be true or false' }).optional(),
  })
  .refine((r) => !r.ellipsis || r.maxLength !== undefined, { message: 'needs maxLength', path: ['ellipsis'] });
export type NameRewrite = z.infer<typeof nameRewriteSchema>;

const ELLIPSIS = '…';

/** The name the remote keeps for `sent`: normalize, then case, then cut. Unchanged without a rule. */
export function rewriteName(sent: string, rule: NameRewrite | undefined): string {
  if (!rule) return sent;
  let name = sent;
  if (rule.normalize) name = name.normalize('NFC').replace(/\s+/g, ' ').trim();
  if (rule.case === 'lower') name = name.toLowerCase();
  if (rule.case === 'upper') name = name.toUpperCase();
  return rule.maxLength === undefined ? name : cut(name, rule.maxLength, rule.ellipsis ?? false);
}

/** At most `max` code points (Array.from never splits a surrogate pair), trailing whitespace trimmed. */
function cut(name: string, max: number, ellipsis: boolean): string {
  const points = Array.from(name);
  if (points.length <= max) return name;
  if (!ellipsis) return points.slice(0, max).join('').trimEnd();
  // The "…" takes one of the `max` places; the text before it loses its trailing space so the
  // result reads "Algebra…" rather than "Algebra …".
  return (
    points
      .slice(0, max - 1)
      .join('')
      .trimEnd() + ELLIPSIS
  );
}

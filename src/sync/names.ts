/**
 * The class name sent on add-class. `{name} · {batchId}` makes each name unique, so resolving an
 * ambiguous create by listing finds exactly this batch's class; `{name}` (default) keeps names as
 * the integrator wrote them.
 */

/** The longest class name the remote takes, in UTF-16 code units (JavaScript's `length`, as it counts). */
export const MAX_CLASS_NAME = 200;

const PLACEHOLDER = /\{(name|batchId|subject)\}/g;

type NameFields = { name: string; batchId: string; subject: string };

/**
 * The template filled in, at most `max` long. Too long, it is the `{name}` part that is cut: a
 * `{batchId}` is what makes the name unique, so it stays whole. A cut never ends inside a
 * character (a surrogate pair, an emoji with its modifiers): the remote would store a broken one.
 * Only when the rest of the template alone does not fit (a very long batch id or subject) is the
 * whole name cut at its end instead, as before.
 */
export function renderClassName(template: string, batch: NameFields, max = MAX_CLASS_NAME): string {
  const whole = fill(template, batch, batch.name).trim();
  if (whole.length <= max) return whole;
  const names = template.match(/\{name\}/g)?.length ?? 0;
  const room = names === 0 ? 0 : Math.floor((max - fill(template, batch, '').length) / names);
  if (room < 1) return cutAt(whole, max).trim();
  return fill(template, batch, cutAt(batch.name, room).trimEnd()).trim();
}

/**
 * One pass with a function: a value is inserted as written ("$&" or "$$" in a name are not
 * replacement patterns) and a "{batchId}" inside a name is not itself replaced.
 */
function fill(template: string, batch: NameFields, name: string): string {
  return template.replace(PLACEHOLDER, (_, field: keyof NameFields) => (field === 'name' ? name : batch[field]));
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The longest prefix of `text` at most `max` long that ends between two user-perceived characters;
 * between two code points when not even the first of them fits (a cluster of hundreds of marks).
 */
export function cutAt(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = 0;
  for (const { index, segment } of graphemes.segment(text)) {
    if (index + segment.length > max) break;
    end = index + segment.length;
  }
  if (end > 0) return text.slice(0, end);
  // A high surrogate last would be half of a pair.
  const high = text.charCodeAt(max - 1) >= 0xd800 && text.charCodeAt(max - 1) <= 0xdbff;
  return text.slice(0, high ? max - 1 : max);
}

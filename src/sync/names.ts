/**
 * The class name sent on add-class. `{name} · {batchId}` makes each name unique, so resolving an
 * ambiguous create by listing finds exactly this batch's class; `{name}` (default) keeps names as
 * the integrator wrote them.
 */
export function renderClassName(template: string, batch: { name: string; batchId: string; subject: string }): string {
  // One pass with a function: a value is inserted as written ("$&" or "$$" in a name are not
  // replacement patterns) and a "{batchId}" inside a name is not itself replaced.
  const rendered = template.replace(/\{(name|batchId|subject)\}/g, (_, field: 'name' | 'batchId' | 'subject') => batch[field]).trim();
  return rendered.slice(0, 200);
}

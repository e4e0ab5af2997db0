/**
 * The class name sent on add-class. `{name} · {batchId}` makes each name unique, so resolving an
 * ambiguous create by listing finds exactly this batch's class; `{name}` (default) keeps names as
 * the integrator wrote them.
 */
export function renderClassName(template: string, batch: { name: string; batchId: string; subject: string }): string {
  const rendered = template
    .replaceAll('{name}', batch.name)
    .replaceAll('{batchId}', batch.batchId)
    .replaceAll('{subject}', batch.subject)
    .trim();
  return rendered.slice(0, 200);
}

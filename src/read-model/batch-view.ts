// The public shape of a mapping (HTTP API, CLI, library), and how the CLI prints it. Lease
// internals stay inside.
import { maskJoinLink } from '../logging/logger.ts';
import type { MappingRow } from '../mapping/index.ts';

export type BatchView = ReturnType<typeof viewOf>;

/** The public shape of a mapping (API, CLI). Lease internals stay inside. */
export function viewOf(row: MappingRow) {
  return {
    batchId: row.batchId,
    instituteId: row.instituteId,
    state: row.state,
    /**
     * The lane stored with it: live or backfill (how it came in), operator (put back by retry or a
     * repair). Never "under way": once its add-class was sent its job goes ahead of all three, whatever this says.
     */
    lane: row.lane,
    classId: row.classId,
    joinLink: row.joinLink,
    className: row.className,
    /** The integrator's version of the last event applied (null when none carried one). */
    version: row.version,
    /** A change recorded and not yet on the class (an edit-class to come), with the name it will carry. */
    changePending: row.classId !== null && row.revision > row.appliedRevision ? { nextClassName: row.nextClassName } : null,
    /** Set once the integrator cancelled it: when, and whether its class was archived. */
    cancelled: row.cancelledAt ? { at: row.cancelledAt, archived: row.archivedAt !== null } : null,
    attempts: row.attempts,
    lastError: row.lastError,
    lastErrorKind: row.lastErrorKind,
    review: row.review,
    receivedAt: row.receivedAt,
    createSentAt: row.createSentAt,
    classCreatedAt: row.classCreatedAt,
    linkEnabledAt: row.linkEnabledAt,
    syncedAt: row.syncedAt,
    failedAt: row.failedAt,
    /** Set while the batch is abandoned: when, the state `abandon --undo` returns it to, and why. */
    abandoned: row.state === 'abandoned' ? { at: row.abandonedAt, from: row.abandonedFrom, reason: row.abandonReason } : null,
    updatedAt: row.updatedAt,
  };
}

export function formatBatch(view: BatchView, showLink: boolean): string {
  const link = showLink ? view.joinLink : maskJoinLink(view.joinLink);
  const lines = [
    `batch       ${view.batchId} (institute ${view.instituteId})`,
    `state       ${view.state}`,
    `lane        ${view.lane}`,
    `class id    ${view.classId ?? '-'}`,
    `join link   ${link ?? '-'}`,
    `class name  ${view.className}`,
    `attempts    ${view.attempts}`,
    `received    ${view.receivedAt.toISOString()}`,
    `synced      ${view.syncedAt?.toISOString() ?? '-'}`,
  ];
  if (view.version !== null) lines.push(`version     ${view.version}`);
  if (view.changePending)
    lines.push(`change      waiting for edit-class${view.changePending.nextClassName ? ` (rename to ${view.changePending.nextClassName})` : ''}`);
  if (view.cancelled) {
    const { at, archived } = view.cancelled;
    lines.push(`cancelled   ${at.toISOString()}${view.classId ? (archived ? '; class archived' : '; class left visible') : ''}`);
  }
  if (view.abandoned) {
    const { at, from, reason } = view.abandoned;
    lines.push(`abandoned   ${at?.toISOString() ?? '-'} (was ${from ?? '-'})${reason ? `: ${reason}` : ''}; \`classroom-sync abandon --undo\` takes it back`);
  }
  if (view.lastError) lines.push(`last error  ${view.lastError}`);
  if (view.review) lines.push(`review      ${JSON.stringify(view.review)}`);
  return lines.join('\n');
}

/**
 * "not known under institute A", and where it is known instead with the option that finds it:
 * the usual cause is a batch of another institute looked up under the default one.
 */
export function notKnownUnder(instituteId: string, elsewhere: readonly string[]): string {
  const here = `not known under institute ${instituteId}`;
  if (elsewhere.length === 0) return here;
  if (elsewhere.length === 1) return `${here}; it is known under institute ${elsewhere[0]}: add --institute ${elsewhere[0]}`;
  return `${here}; it is known under institutes ${elsewhere.join(', ')}: add --institute with one of them`;
}

// The steps a change of a batch adds once its class exists (src/intake/changes.ts records the
// change): one edit-class that carries the new values, or one that archives the class of a
// cancelled batch. Each is a step of its own: the call, then a fenced write of what the class now
// carries, with its audit line. Sending the same edit again changes nothing more, so a lost answer
// costs only a repeat; a change arriving meanwhile moves the revision on, and the next step sends it.
import type { ClassChanges } from '../classroom/client.ts';
import type { MappingRow } from '../mapping/index.ts';
import * as mapping from '../mapping/index.ts';
import { type ClassroomError, isClassroomError, isForbidden } from '../classroom/errors.ts';
import { DeferError, SyncError } from './errors.ts';
import { changesOf } from './class-values.ts';
import { callOnClass } from './link-steps.ts';
import { matchName } from './matching.ts';
import type { StepRun } from './run-handle.ts';

export type ChangeStep = (run: StepRun) => Promise<void>;

/** States in which the batch's class exists and the batch is not held by an operator. */
const WITH_CLASS: ReadonlySet<mapping.BatchState> = new Set(['created', 'link_enabled', 'synced', 'cancelled']);

/** The step a change of this batch calls for now, if any (a class in doubt is settled first). */
export function changeStepOf(row: MappingRow): ChangeStep | undefined {
  if (row.cancelledAt) {
    if (row.state === 'pending' && mapping.nothingSent(row)) return cancelUnsent;
    const archiveDue = row.state !== 'cancelled' || mapping.changeDue(row);
    return row.classId && WITH_CLASS.has(row.state) && archiveDue ? archive : undefined;
  }
  if (!row.classId || !WITH_CLASS.has(row.state)) return undefined;
  return row.revision > row.appliedRevision ? edit : undefined;
}

/** Cancelled before any add-class was sent: it ends here, and never gets a class. */
async function cancelUnsent(run: StepRun): Promise<void> {
  const { revision } = run.current;
  await run.write('cancelled', (events) => mapping.markCancelled(run.deps.db, run.lease, { revision, archived: false }, events), {
    detail: { archived: false },
  });
}

/**
 * Cancelled with a class: archived (hidden from the institute's listing) unless
 * CLASSROOM_ARCHIVE_ON_CANCEL=false. A class the remote no longer knows is as good as archived: the
 * batch ends `cancelled` all the same. Reopened since the step was chosen, it archives nothing.
 */
async function archive(run: StepRun): Promise<void> {
  const row = await run.refresh();
  if (!row.cancelledAt) return;
  const classId = run.requireClassId();
  const archiving = run.deps.settings.archiveOnCancel !== false;
  const gone = archiving ? await archiveRemote(run, classId) : false;
  const end = { revision: row.revision, archived: archiving && !gone };
  const detail = { archived: end.archived, ...(gone ? { classGone: true } : {}) };
  await run.write('cancelled', (events) => mapping.markCancelled(run.deps.db, run.lease, end, events), { detail });
  const what = gone
    ? 'batch cancelled; its class is gone from the remote'
    : archiving
      ? 'class archived: batch cancelled'
      : 'batch cancelled; its class is left as it is';
  run.log.info({ classId, archived: end.archived }, what);
}

/** Archives the class; true when the remote no longer knows it (404 past the read-lag patience). */
async function archiveRemote(run: StepRun, classId: string): Promise<boolean> {
  try {
    await editRemote(run, classId, { archived: true });
    return false;
  } catch (error) {
    if (error instanceof SyncError && error.kind === 'class_unknown') return true;
    throw error;
  }
}

/**
 * The batch changed (or was reopened): one edit-class with what its class does not carry yet. A
 * refusal leaves the class as it was and the batch where it was (a synced one stays synced, its link
 * working), with the refusal recorded; a later change is sent on its own.
 */
async function edit(run: StepRun): Promise<void> {
  const row = await run.refresh();
  // Cancelled since the step was chosen: the archive goes instead (an edit must not stand in for a cancel).
  if (row.cancelledAt) return;
  const classId = run.requireClassId();
  const changes = changesOf(row);
  const fields = Object.keys({ ...changes, ...changes.extra }).filter((f) => f !== 'extra');
  const atRest = row.state === 'synced';
  let kept: string | undefined;
  try {
    kept = fields.length > 0 ? await editRemote(run, classId, changes) : undefined;
  } catch (error) {
    if (!refusesTheChange(error) || changes.archived === false) throw error;
    const carried = await readBack(run, classId, { name: changes.name, oldName: row.className, subject: changes.subject });
    const refused = { revision: row.revision, error: `edit-class refused the change (${fields.join(', ')}): ${error.message}`, atRest, carried };
    const events = (e: mapping.AuditEvent[]) => [...e, editEvent(run, 'class_edit_refused', classId, fields, row.revision)];
    await run.write(row.state, (e) => mapping.markEditRefused(run.deps.db, run.lease, run.deps.settings.leaseMs, refused, events(e)), { error: refused.error });
    run.log.warn({ classId, fields, revision: row.revision, err: error }, 'the remote refused the change; the class keeps what it had');
    return;
  }
  const edit = { revision: row.revision, event: row.event, version: row.version, sentName: changes.name, keptName: kept, atRest };
  await run.write(row.state, (events) =>
    mapping.markEdited(run.deps.db, run.lease, run.deps.settings.leaseMs, edit, [...events, editEvent(run, 'class_edited', classId, fields, row.revision)]),
  );
  run.log.info({ classId, fields, revision: row.revision }, fields.length > 0 ? 'class edited: batch changed' : 'batch changed; its class already carries it');
}

/** An edit-class of the batch's own class; the name the remote kept, when its answer shows it. */
async function editRemote(run: StepRun, classId: string, changes: ClassChanges): Promise<string | undefined> {
  awaitEarlierEdits(run, classId);
  try {
    const { keptName } = await callOnClass(run, classId, () => run.deps.classroom.editClass(classId, changes, run.callOptions()));
    return keptName;
  } catch (error) {
    // It may have reached the remote, and may still take effect after this run ends: the next edit waits.
    if (isClassroomError(error) && error.kind === 'outcome_unknown') run.unstored.editLandsWithinMs = run.deps.settings.requestTimeoutMs;
    throw error;
  }
}

/**
 * The remote refused this change itself: a 4xx about the request. A 403 may be about the key (src/
 * sync/run-end.ts asks a probe: a refused key waits, unchanged), so it is not taken for one. A refused
 * unarchive (tested by the caller) leaves the class hidden: not a working class, so the batch fails.
 */
function refusesTheChange(error: unknown): error is ClassroomError {
  return isClassroomError(error) && error.kind === 'rejected' && !isForbidden(error);
}

/**
 * What the class carries of what the refused edit sent, read with get-class: a refusal proves
 * nothing about it, since an earlier edit whose answer was lost may have landed. Only what is ours is
 * taken: the name sent (the same name as the remote keeps names, never a cut of it, nor one that is
 * also the old name), and the subject sent. Anything else on the class (a rename by hand) is left for
 * reconciliation to report.
 */
async function readBack(
  run: StepRun,
  classId: string,
  sent: { name: string | undefined; oldName: string; subject: string | undefined },
): Promise<mapping.Carried> {
  const record = await callOnClass(run, classId, () => run.deps.classroom.getClass(classId, run.callOptions()));
  const name = typeof record.name === 'string' ? record.name : undefined;
  const same = (ours: string | undefined) => ours !== undefined && name !== undefined && matchName(ours, name, run.deps.settings.nameRules) === 'same';
  const renamed = same(sent.name) && !same(sent.oldName);
  return {
    className: renamed ? sent.name : undefined,
    remoteName: renamed ? name : undefined,
    subject: sent.subject !== undefined && record.subject === sent.subject ? sent.subject : undefined,
  };
}

/**
 * An edit sent earlier (by a run that lost its answer, or that died) may still take effect until
 * `calls_settled_at` (`callsLandedBy`): a newer edit sent before then could be undone by it, so it waits, using no attempt.
 */
function awaitEarlierEdits(run: StepRun, classId: string): void {
  const waitMs = (run.current.callsLandedBy?.getTime() ?? 0) - run.lag.now();
  if (waitMs <= 0) return;
  const why = `an edit-class sent earlier for class ${classId} may still take effect for ${Math.ceil(waitMs)} ms; the next edit waits, so that the earlier one cannot undo it`;
  throw new DeferError(waitMs + 50, why, 'busy', 'earlier_edit_in_flight');
}

function editEvent(run: StepRun, type: 'class_edited' | 'class_edit_refused', classId: string, fields: string[], revision: number): mapping.AuditEvent {
  return { type, classId, attempt: run.journal.attempt, workerId: run.deps.workerId, detail: { fields, revision } };
}

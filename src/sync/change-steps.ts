// The steps a change of a batch adds once its class exists (src/intake/changes.ts records the
// change): one edit-class that carries the new values, or one that archives the class of a
// cancelled batch. Each is a step of its own: the call, then a fenced write of what the class now
// carries, with its audit line. Sending the same edit again changes nothing more, so a lost answer
// costs only a repeat; a change arriving meanwhile moves the revision on, and the next step sends it.
import type { ClassChanges } from '../classroom/client.ts';
import type { MappingRow, StoredEvent } from '../mapping/index.ts';
import * as mapping from '../mapping/index.ts';
import { callOnClass } from './link-steps.ts';
import type { StepRun } from './run-handle.ts';

export type ChangeStep = (run: StepRun) => Promise<void>;

/** States in which the batch's class exists and the batch is not held by an operator. */
const WITH_CLASS = new Set(['created', 'link_enabled', 'synced', 'cancelled']);

/** The step a change of this batch calls for now, if any (a class in doubt is settled first). */
export function changeStepOf(row: MappingRow): ChangeStep | undefined {
  if (row.cancelledAt) {
    if (row.state === 'pending') return cancelUnsent;
    const archiveDue = row.state !== 'cancelled' || mapping.changeDue(row);
    return row.classId && WITH_CLASS.has(row.state) && archiveDue ? archive : undefined;
  }
  if (!row.classId || !WITH_CLASS.has(row.state)) return undefined;
  return row.revision > row.appliedRevision || row.archivedAt ? edit : undefined;
}

/** Cancelled before any add-class was sent: it ends here, and never gets a class. */
async function cancelUnsent(run: StepRun): Promise<void> {
  const { revision } = run.current;
  await run.write('cancelled', (events) => mapping.markCancelled(run.deps.db, run.lease, { revision, archived: false }, events), {
    detail: { archived: false },
  });
}

/** Cancelled with a class: archived (hidden from the institute's listing) unless CLASSROOM_ARCHIVE_ON_CANCEL=false. */
async function archive(run: StepRun): Promise<void> {
  const row = await run.refresh();
  const classId = run.requireClassId();
  const archiving = run.deps.settings.archiveOnCancel !== false;
  if (archiving) await editRemote(run, classId, { archived: true });
  const end = { revision: row.revision, archived: archiving };
  await run.write('cancelled', (events) => mapping.markCancelled(run.deps.db, run.lease, end, events), { detail: { archived: archiving } });
  run.log.info({ classId, archived: archiving }, archiving ? 'class archived: batch cancelled' : 'batch cancelled; its class is left as it is');
}

/** The batch changed (or was reopened): one edit-class with what its class does not carry yet. */
async function edit(run: StepRun): Promise<void> {
  const row = await run.refresh();
  const classId = run.requireClassId();
  const changes = changesOf(row);
  const fields = Object.keys({ ...changes, ...changes.extra }).filter((f) => f !== 'extra');
  const kept = fields.length > 0 ? await editRemote(run, classId, changes) : undefined;
  const edit = { revision: row.revision, event: row.event, sentName: changes.name, keptName: kept, atRest: row.state === 'synced' };
  await run.write(row.state, (events) =>
    mapping.markEdited(run.deps.db, run.lease, run.deps.settings.leaseMs, edit, [...events, editedEvent(run, classId, fields, row.revision)]),
  );
  run.log.info({ classId, fields, revision: row.revision }, fields.length > 0 ? 'class edited: batch changed' : 'batch changed; its class already carries it');
}

/** What the class lacks: a waiting name, a changed subject or extra field, and being listed again. */
export function changesOf(row: Pick<MappingRow, 'event' | 'appliedEvent' | 'nextClassName' | 'archivedAt'>): ClassChanges {
  const applied: StoredEvent = row.appliedEvent ?? row.event;
  const changes: ClassChanges = {};
  if (row.nextClassName !== null) changes.name = row.nextClassName;
  if (row.event.subject !== applied.subject) changes.subject = row.event.subject;
  const extra = Object.fromEntries(
    Object.entries(row.event.extra ?? {}).filter(([key, value]) => JSON.stringify(applied.extra?.[key]) !== JSON.stringify(value)),
  );
  if (Object.keys(extra).length > 0) changes.extra = extra;
  if (row.archivedAt) changes.archived = false;
  return changes;
}

/** An edit-class of the batch's own class; the name the remote kept, when its answer shows it. */
async function editRemote(run: StepRun, classId: string, changes: ClassChanges): Promise<string | undefined> {
  const { keptName } = await callOnClass(run, classId, 'edit-class', () => run.deps.classroom.editClass(classId, changes, run.callOptions()));
  return keptName;
}

function editedEvent(run: StepRun, classId: string, fields: string[], revision: number): mapping.AuditEvent {
  return { type: 'class_edited', classId, attempt: run.journal.attempt, workerId: run.deps.workerId, detail: { fields, revision } };
}

// What a change of a recorded batch does to its row, decided from the row as it stands (src/mapping/
// apply-change.ts writes the answer only while the row is still as read, else asks again). The remote
// is never called here: a change that needs an edit-class moves the revision on, and a sync run
// applies it under the batch's lease. What the row's facts mean is asked of src/mapping/doubt.ts:
//
//   nothing sent            the newest values become what the next add-class sends (whatever the
//                           state); a cancel ends it `cancelled` (an abandoned one once undone)
//   a class exists          the values wait beside the class's name; a run edits (or archives) the
//                           class, and the batch keeps its state (a failed one goes back to `created`
//                           for an archive)
//   in doubt                the same, and the state is kept: a run settles the add-class from the
//                           listing first (or an operator, in needs_review); never `pending`, never
//                           `cancelled` while a class may be live
//   cancelled               a later created/updated event reopens it (its class is unarchived, updated)
import {
  type BatchState,
  CLASS_FIELDS,
  type ChangePlan,
  type ChangeSet,
  type MappingRow,
  type StoredEvent,
  changedFields,
  classFieldsOf,
  copyField,
  nothingSent,
} from '../mapping/index.ts';
import { type BatchEvent, typeOf } from './schema.ts';

/** States in which an operator has the batch (or a failure waits for one): a change is recorded, and applied once they let it go. */
const HELD: ReadonlySet<BatchState> = new Set(['needs_review', 'abandoned', 'failed']);

export function planChange(row: MappingRow, event: BatchEvent, renderName: (event: StoredEvent) => string): ChangePlan {
  const type = typeOf(event);
  if (event.version !== undefined && row.version !== null && event.version <= row.version) {
    return { kind: 'stale', detail: { type, version: event.version, lastVersion: row.version } };
  }
  const version = event.version ?? row.version;
  if (type === 'batch.cancelled') return cancel(row, version);
  const values = valuesOf(row.event, event);
  return update(row, values, renderName(values), version, type);
}

/** The batch's values after the event: a created event replaces them, an update sets what it names. */
function valuesOf(current: StoredEvent, event: BatchEvent): StoredEvent {
  if (!('type' in event)) return { batchId: event.batchId, instituteId: event.instituteId, ...classFieldsOf(event), extra: event.extra };
  if (event.type === 'batch.cancelled') return current;
  const values: StoredEvent = { ...current, extra: { ...current.extra, ...event.extra } };
  for (const field of CLASS_FIELDS) copyField(values, event, field);
  return values;
}

function cancel(row: MappingRow, version: number | null): ChangePlan {
  const detail = { type: 'batch.cancelled', version };
  if (row.cancelledAt || row.state === 'cancelled') {
    return { kind: 'apply', set: { version }, audit: { type: 'cancel_requested', detail: { ...detail, already: true } } };
  }
  if (nothingSent(row) && (row.state === 'pending' || row.state === 'failed')) {
    // No add-class made a class, and none will be sent: it ends here.
    const set: ChangeSet = { state: 'cancelled', cancelled: 'now', version, bumpRevision: true, noRemoteWork: true, fenceRunner: true };
    return { kind: 'apply', set, audit: { type: 'cancel_requested', detail } };
  }
  // A class exists or may (or an operator holds the batch): the cancel waits beside it. A run settles a
  // doubt first, then archives the class; a failed batch with a class goes back to `created` for that.
  const state = row.state === 'failed' && row.classId !== null ? 'created' : undefined;
  const set: ChangeSet = { cancelled: 'now', version, bumpRevision: true, ...(state ? { state } : {}) };
  return { kind: 'apply', set, audit: { type: 'cancel_requested', detail } };
}

function update(row: MappingRow, values: StoredEvent, name: string, version: number | null, type: string): ChangePlan {
  const reopening = row.cancelledAt !== null || row.state === 'cancelled';
  const auditType = reopening ? 'reopened' : 'updated';
  const fields = changedFields(row.event, values);
  const detail = { type, version, fields, ...(name !== row.className ? { className: name } : {}) };
  // The same values again: the version is recorded, and nothing is sent.
  if (fields.length === 0 && !reopening) return { kind: 'apply', set: { version }, audit: { type: auditType, detail } };
  // Reopened with a class: its archive may have reached the remote even if no answer said so.
  const reopen: ChangeSet = reopening ? { cancelled: null, ...(row.classId !== null ? { mayBeArchived: true } : {}) } : {};
  // A cancelled batch is never in doubt: without a class, nothing was sent.
  const reopenedState = row.state === 'cancelled' ? (row.classId === null ? 'pending' : 'created') : undefined;
  const base: ChangeSet = { event: values, version, bumpRevision: true, ...reopen, ...(reopenedState ? { state: reopenedState } : {}) };
  if (nothingSent(row)) {
    // The next add-class (after an operator's retry or undo, for a held batch) carries these values.
    // A run holding the old ones is fenced off.
    const fence = (reopenedState ?? row.state) === 'pending' ? { fenceRunner: true } : {};
    const set: ChangeSet = { ...base, className: name, nextClassName: null, ...fence };
    return { kind: 'apply', set, audit: { type: auditType, detail: held(row, detail) } };
  }
  // The sent name settles an add-class in doubt and names the class until an edit lands; a rename
  // already waiting (or in flight) is replaced, so the last one wins.
  const renames = name !== row.className || row.nextClassName !== null;
  const set: ChangeSet = { ...base, nextClassName: renames ? name : null };
  return { kind: 'apply', set, audit: { type: auditType, detail: held(row, detail) } };
}

/** The audit detail, naming who holds the batch when an operator does (the change applies once they let it go). */
const held = (row: MappingRow, detail: Record<string, unknown>) => ({ ...detail, ...(HELD.has(row.state) ? { held: row.state } : {}) });

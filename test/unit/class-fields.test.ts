// The class fields are declared once (src/db/schema/class-fields.ts), and one diff of two events
// (`changedFields`) both moves a batch's revision and names what its edit-class sends: for every
// declared field, and for an extra field, a change of that field alone must do both, or an edit is
// never made, or one is recorded as applied although nothing was sent.
import { describe, expect, it } from 'vitest';
import { planChange } from '../../src/intake/changes.ts';
import { type BatchEvent, parseBatchEvent } from '../../src/intake/schema.ts';
import { CLASS_FIELDS, type ClassFieldName, type MappingRow, type StoredEvent, changedFields } from '../../src/mapping/index.ts';
import { addClassInput, changesOf } from '../../src/sync/class-values.ts';

const event: StoredEvent = { batchId: 'B-1', instituteId: 'inst-1', name: 'Algebra I', subject: 'Maths', extra: { room: '12' } };

/** A value for each declared field other than the event's: a new field gets one here. */
const CHANGED: Record<ClassFieldName, string> = { name: 'Algebra II', subject: 'Mathematics' };

/** A synced batch whose class carries `event`. */
const synced = {
  state: 'synced',
  classId: 'class-1',
  className: event.name,
  nextClassName: null,
  cancelledAt: null,
  archivedAt: null,
  createSentAt: new Date(0),
  version: null,
  event,
  appliedEvent: event,
} as MappingRow;

/** The batch after `change`, as its next run reads it, and what its edit-class names. */
function applied(change: BatchEvent): { fields: unknown; named: string[]; changes: ReturnType<typeof changesOf>; bumped: boolean } {
  const plan = planChange(synced, change, (values) => values.name);
  if (plan.kind !== 'apply') throw new Error(`expected the change to apply, got ${plan.kind}`);
  const row = { ...synced, event: plan.set.event ?? synced.event, nextClassName: plan.set.nextClassName ?? null };
  const changes = changesOf(row);
  const named = Object.keys({ ...changes, ...changes.extra }).filter((f) => f !== 'extra');
  return { fields: plan.audit.detail.fields, named, changes, bumped: plan.set.bumpRevision === true };
}

const update = (fields: Record<string, unknown>): BatchEvent => {
  const parsed = parseBatchEvent({ type: 'batch.updated', batchId: event.batchId, instituteId: event.instituteId, ...fields }, event.instituteId);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.event;
};

describe('class fields', () => {
  it.each(CLASS_FIELDS)('a change of %s alone moves the revision, and the edit-class sends it', (field) => {
    const { fields, named, changes, bumped } = applied(update({ [field]: CHANGED[field] }));
    expect(bumped).toBe(true);
    expect(fields).toEqual([field]);
    expect(named).toContain(field);
    expect(changes[field]).toBe(CHANGED[field]);
  });

  it('a change of an extra field alone moves the revision, and the edit-class sends it', () => {
    const { fields, named, changes, bumped } = applied(update({ room: '14' }));
    expect(bumped).toBe(true);
    expect(fields).toEqual(['room']);
    expect(named).toContain('room');
    expect(changes.extra).toEqual({ room: '14' });
  });

  it('the same values again move nothing', () => {
    const plan = planChange(synced, update({ subject: event.subject, room: '12' }), (values) => values.name);
    expect(plan).toMatchObject({ kind: 'apply', set: { version: null }, audit: { detail: { fields: [] } } });
    expect(plan.kind === 'apply' && plan.set.bumpRevision).toBeFalsy();
  });

  it('an unknown class is taken to lack every field; add-class carries every field', () => {
    expect(changedFields(undefined, event)).toEqual([...CLASS_FIELDS, 'room']);
    const input = addClassInput(event, 'Algebra I (B-1)', 'inst-1');
    for (const field of CLASS_FIELDS) if (field !== 'name') expect(input[field]).toBe(event[field]);
    expect(input).toMatchObject({ name: 'Algebra I (B-1)', instituteId: 'inst-1', extra: { room: '12' } });
  });

  it('a declared field is never taken for an extra one', () => {
    const { extra: _extra, ...own } = event;
    const parsed = parseBatchEvent({ ...own, ...CHANGED }, 'inst-1');
    expect(parsed.ok && 'extra' in parsed.event && Object.keys(parsed.event.extra)).toEqual([]);
  });
});

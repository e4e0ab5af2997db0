// What the remote is sent of a batch's values: the add-class input and an edit-class's changes, both
// made from the declared class fields (src/db/schema/class-fields.ts), so a new field reaches both.
import type { AddClassInput, ClassChanges } from '../classroom/client.ts';
import * as mapping from '../mapping/index.ts';
import type { MappingRow, StoredEvent } from '../mapping/index.ts';

/** The add-class of a batch: its class fields, named `className` (the rendered name), in its institute. */
export function addClassInput(event: StoredEvent, className: string, instituteId: string): AddClassInput {
  return { ...mapping.classFieldsOf(event), name: className, instituteId, extra: event.extra ?? {} };
}

/**
 * What an edit sends: a waiting name, being listed again, and every other class field and extra
 * field whole. Those are sent even when `applied_event` already holds them: an earlier edit whose
 * answer was lost may have given the class other values (a change, then a change back), so what the
 * class carries is taken as unknown, and sending them again is harmless. The class's name is
 * rendered from the batch's: it is sent only when one waits (a rename in flight keeps it waiting).
 */
export function changesOf(row: Pick<MappingRow, 'event' | 'nextClassName' | 'archivedAt'>): ClassChanges {
  const changes: ClassChanges = {};
  const extra: Record<string, unknown> = {};
  for (const field of mapping.changedFields(undefined, row.event)) {
    if (field === 'name') continue;
    if (mapping.isClassField(field)) mapping.copyField(changes, row.event, field);
    else extra[field] = row.event.extra[field];
  }
  if (row.nextClassName !== null) changes.name = row.nextClassName;
  if (Object.keys(extra).length > 0) changes.extra = extra;
  if (row.archivedAt) changes.archived = false;
  return changes;
}

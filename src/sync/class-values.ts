// What the remote is sent of a batch's values, made from the declared class fields
// (src/db/schema/class-fields.ts), so a new field reaches it.
import type { AddClassInput } from '../classroom/client.ts';
import * as mapping from '../mapping/index.ts';
import type { StoredEvent } from '../mapping/index.ts';

/** The add-class of a batch: its class fields, named `className` (the rendered name), in its institute. */
export function addClassInput(event: StoredEvent, className: string, instituteId: string): AddClassInput {
  return { ...mapping.classFieldsOf(event), name: className, instituteId, extra: event.extra ?? {} };
}

// The class's fields, declared once. Intake validates events with this schema; the stored event,
// add-class and edit-class take their types from it; `changedFields` is the one answer to "what did
// this change touch", which both moves a batch's revision (src/intake/changes.ts) and names what an
// edit-class sends (src/sync/change-steps.ts). A new field added here reaches all of them.
import { z } from 'zod';
import { printable } from '../../support/text.ts';

/**
 * The class fields an event names. `name` is the batch's name, rendered into the class's name by the
 * name template; every other field is sent as it is, on add-class and, whole, on each edit-class.
 */
export const classFieldsSchema = z.object({ name: printable(200), subject: printable(200) });

export type ClassFields = z.infer<typeof classFieldsSchema>;
export type ClassFieldName = keyof ClassFields;

/** The declared fields, in declaration order (the order audits and edits name them in). */
export const CLASS_FIELDS = classFieldsSchema.keyof().options;

/** A class's values: the declared fields, and the extra fields an event carried besides them. */
export interface ClassValues extends ClassFields {
  /** Extra class fields, sent as they are on add-class and edit-class. */
  extra: Record<string, unknown>;
}

export const isClassField = (key: string): key is ClassFieldName => (CLASS_FIELDS as readonly string[]).includes(key);

/** The declared fields of a class's values, without the extra ones (a field left out stays out). */
export function classFieldsOf(values: ClassFields): ClassFields {
  const fields: Partial<ClassFields> = {};
  for (const field of CLASS_FIELDS) copyField(fields, values, field);
  return fields as ClassFields;
}

/** Copies one declared field, if set: generic, so that each field keeps its own type. */
export function copyField<K extends ClassFieldName>(to: Partial<ClassFields>, from: { [F in ClassFieldName]?: ClassFields[F] | undefined }, field: K): void {
  const value = from[field];
  if (value !== undefined) to[field] = value;
}

/** An event's own fields but the declared class fields: its extra fields, still to be checked. */
export function withoutClassFields(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([key]) => !isClassField(key)));
}

/**
 * The fields `after` differs from `before` in: declared fields by name, then extra fields by key.
 * Extra fields only merge (an update never removes one), so only those `after` carries are compared.
 * With no `before` (what a class carries is not known), every field `after` carries is named.
 */
export function changedFields(before: ClassValues | undefined, after: ClassValues): string[] {
  const differs = (a: unknown, b: unknown) => (before === undefined ? b !== undefined : JSON.stringify(a) !== JSON.stringify(b));
  const fields: string[] = CLASS_FIELDS.filter((field) => differs(before?.[field], after[field]));
  // Rows stored before extra fields existed may lack them.
  const extra = after.extra ?? {};
  for (const key of Object.keys(extra)) if (differs(before?.extra?.[key], extra[key])) fields.push(key);
  return fields;
}

// The batch reads of the model-based test, each a prepared statement, compiled once per database:
// a sequence reads its row some thirty times and the invariants' view a dozen, and Drizzle building
// a select of every column again for each (and PostgreSQL parsing and planning it again) cost a
// sequence more CPU than the product's own statements. Same SQL, same mapping of the row.
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../src/db/client.ts';
import { type BatchRow, batchClasses } from '../../src/db/schema/index.ts';
import type { BatchKey } from '../../src/mapping/index.ts';

/** A webhook message of the batch and what its row held when the message was written (mbt_message_facts). */
export interface Message {
  type: string;
  data: { state?: string; className?: string; subject?: string };
  className: string | null;
  appliedSubject: string | null;
}

/** The invariants' view of the batch: its row, its webhook messages, the revisions whose edit the remote refused. */
export interface Observed {
  row: BatchRow;
  messages: Message[];
  refused: Set<number>;
}

const byKey = () => and(eq(batchClasses.instituteId, sql.placeholder('instituteId')), eq(batchClasses.batchId, sql.placeholder('batchId')));

function prepared(db: Db) {
  return {
    /** The batch's row. */
    row: db.select().from(batchClasses).where(byKey()).prepare('mbt_row'),
    /**
     * What the invariants read, in one statement (one snapshot): the batch's row; its webhook
     * messages, oldest first, each with what its row held when it was written; and the revisions
     * whose edit-class the remote refused (their `class_edit_refused` lines: the durable record).
     * The subqueries name the row's columns as batch_classes.x: Drizzle writes a column interpolated
     * into a template unqualified, which a subquery would take for a column of its own table.
     */
    observed: db
      .select({
        row: batchClasses,
        messages: sql<Message[]>`coalesce((
          select json_agg(json_build_object('type', m.type, 'data', m.data, 'className', f.class_name, 'appliedSubject', f.applied_subject) order by m.id)
            from webhook_messages m left join mbt_message_facts f on f.message_id = m.message_id
           where m.institute_id = batch_classes.institute_id and m.batch_id = batch_classes.batch_id), '[]'::json)`,
        refused: sql<number[]>`array(
          select (e.detail ->> 'revision')::int from batch_events e where e.batch_row_id = batch_classes.id and e.type = 'class_edit_refused')`,
      })
      .from(batchClasses)
      .where(byKey())
      .prepare('mbt_observed'),
  };
}

const compiled = new WeakMap<Db, ReturnType<typeof prepared>>();

function readsOf(db: Db): ReturnType<typeof prepared> {
  const known = compiled.get(db);
  if (known) return known;
  const reads = prepared(db);
  compiled.set(db, reads);
  return reads;
}

/** The batch's row; throws when it has none. */
export async function readRow(db: Db, key: BatchKey): Promise<BatchRow> {
  const [row] = await readsOf(db).row.execute({ ...key });
  if (!row) throw new Error(`batch ${key.batchId} has no row`);
  return row;
}

/** The batch's row, its webhook messages and the refused revisions, in one snapshot; throws when it has no row. */
export async function readObserved(db: Db, key: BatchKey): Promise<Observed> {
  const [found] = await readsOf(db).observed.execute({ ...key });
  if (!found) throw new Error(`batch ${key.batchId} has no row`);
  return { row: found.row, messages: found.messages, refused: new Set(found.refused) };
}

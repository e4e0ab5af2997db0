import { sql } from 'drizzle-orm';
import { TERMINAL_STATES } from '../db/schema/index.ts';
import { MAY_HAVE_CLASS } from './doubt.ts';
import { type Db, execute, interval } from './sql.ts';
import type { BatchState } from './types.ts';

/** A mapping as a reconciliation pass compares it with the listing. */
export interface ReconcileRow {
  id: number;
  batchId: string;
  className: string;
  /** The name the remote kept (stored at get-class); matched exactly when known. */
  remoteName?: string | null;
  classId: string | null;
  /** True when a join link is stored; the link itself stays in the database. */
  hasLink: boolean;
  state: BatchState;
  /** Not terminal, untouched for longer than the stuck threshold, and no lease held. */
  stale: boolean;
  /** The ClassID was stored so recently that a lagging listing may not show the class yet. */
  recent: boolean;
  /** An add-class was sent and its outcome is not settled (with no ClassID: it may have made a class). */
  sentCreate?: boolean;
  /** Changes accepted so far; a repair that asks for an edit is guarded by the revision it read. */
  revision: number;
  /** A change waits for edit-class: `revision` above `applied_revision`, or a `next_class_name` not sent yet. */
  changePending: boolean;
}

const terminal = sql.join(
  TERMINAL_STATES.map((s) => sql`${s}`),
  sql`, `,
);

/**
 * Every mapping of the institute in one statement; abandoned batches are left out (an operator gave
 * them up), except those a class of which may exist (src/mapping/doubt.ts): they stay reported. The rows come back as the driver builds them (no second copy of 100k objects), with the
 * flags computed by Postgres against its own clock.
 */
export async function reconcileRows(db: Db, instituteId: string, options: { stuckAfterMs: number; graceMs: number }): Promise<ReconcileRow[]> {
  const result = await execute<ReconcileRow>(
    db,
    sql`
    select b.id::float8 as "id", b.batch_id as "batchId", b.class_name as "className", b.remote_name as "remoteName",
           b.class_id as "classId", b.create_sent_at is not null as "sentCreate",
           coalesce(b.join_link, '') <> '' as "hasLink",
           b.state as "state", b.revision as "revision",
           (b.revision > b.applied_revision or b.next_class_name is not null) as "changePending",
           (b.state::text not in (${terminal})
             and b.updated_at < now() - ${interval(options.stuckAfterMs)}
             and (b.lease_expires_at is null or b.lease_expires_at < now())) as "stale",
           coalesce(b.class_created_at > now() - ${interval(options.graceMs)}, false) as "recent"
      from batch_classes b
     where b.institute_id = ${instituteId} and (b.state <> 'abandoned' or ${MAY_HAVE_CLASS})
     order by b.id`,
  );
  return result.rows;
}

// The write of a run's edit-class, applied or refused (mark-edited.ts, mark-edit-refused.ts): a batch
// at rest (synced) releases its lease with the write; one still on its way keeps it for its next step.
import type { SQL } from 'drizzle-orm';
import { type FencedStatement, fencedStatement, fencedWrite } from './fenced-write.ts';
import type { Db } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

export interface EditStatements {
  extend: FencedStatement;
  release: FencedStatement;
}

/** The two forms of an edit's write, one setting `set`: keeping the lease, and releasing it. */
export const editStatements = (name: string, set: SQL): EditStatements => ({
  extend: fencedStatement(name, 'extend', set),
  release: fencedStatement(name, 'release', set),
});

/** Writes `statements`' form for the batch: released at rest, else kept for `leaseMs` more. */
export function editWrite(
  db: Db,
  lease: Lease,
  leaseMs: number,
  statements: EditStatements,
  atRest: boolean,
  events: readonly AuditEvent[],
  values: Record<string, unknown>,
) {
  return atRest
    ? fencedWrite(db, lease, statements.release, { events, values })
    : fencedWrite(db, lease, statements.extend, { events, values, extendMs: leaseMs });
}

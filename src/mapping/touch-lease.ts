import { fencedWrite } from './fenced-write.ts';
import { type Unstored, unstoredAssignments } from './unstored.ts';
import type { DbOrTx, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';

/**
 * Proves the lease is still this run's and extends it, with any calls to record and whatever the run
 * has not stored yet (see Unstored); changes nothing else.
 */
export function touchLease(db: DbOrTx, lease: Lease, leaseMs: number, events: readonly AuditEvent[] = [], unstored: Unstored = {}): Promise<ProgressRow> {
  const set = unstoredAssignments(unstored);
  const name = set ? 'touch_lease_link' : 'touch_lease';
  return fencedWrite(db, lease, { name, ...(set ? { set } : {}), lease: { extendMs: leaseMs }, events });
}

import { fencedStatement, fencedWrite } from './fenced-write.ts';
import type { Db, ProgressRow } from './sql.ts';
import type { AuditEvent, Lease } from './types.ts';
import { type Unstored, storeLinkStep, unstoredValues } from './unstored.ts';

const TOUCH = fencedStatement('touch_lease', 'extend');
const TOUCH_STORING_LINK = fencedStatement('touch_lease_link', 'extend', storeLinkStep());

/**
 * Proves the lease is still this run's and extends it, with any calls to record and whatever the run
 * has not stored yet (see Unstored); changes nothing else.
 */
export function touchLease(db: Db, lease: Lease, leaseMs: number, events: readonly AuditEvent[] = [], unstored: Unstored = {}): Promise<ProgressRow> {
  const link = unstoredValues(unstored);
  if (!link) return fencedWrite(db, lease, TOUCH, { extendMs: leaseMs, events });
  return fencedWrite(db, lease, TOUCH_STORING_LINK, { extendMs: leaseMs, events, values: link });
}

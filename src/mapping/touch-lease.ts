import { fencedStatement, fencedWrite } from './fenced-write.ts';
import type { Db, ProgressRow } from './sql.ts';
import type { Lease } from './types.ts';

const TOUCH = fencedStatement('touch_lease', 'extend');

/**
 * Proves the lease is still this run's and extends it; changes nothing else. The run's heartbeat
 * (src/sync/lease-keeper.ts): the calls a run made and what it has not stored yet ride on its next
 * write, not on a renewal.
 */
export function touchLease(db: Db, lease: Lease, leaseMs: number): Promise<ProgressRow> {
  return fencedWrite(db, lease, TOUCH, { extendMs: leaseMs, events: [] });
}

import { createHash } from 'node:crypto';
import type { BatchKey } from '../mapping/index.ts';

export type { BatchKey };

/**
 * One job id per (institute, batch): BullMQ then refuses a second live job for the same batch.
 * Hashed because batch ids are the integrator's and may hold ":" (BullMQ's key separator).
 */
export function jobIdFor(key: BatchKey): string {
  const digest = createHash('sha256').update(`${key.instituteId}\u0000${key.batchId}`).digest('base64url');
  return `batch-${digest.slice(0, 27)}`;
}

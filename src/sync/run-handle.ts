// What a step outside the run's own file uses of the run (src/sync/steps.ts implements it): the
// batch as the run sees it, its calls' options, and its fenced writes. Steps take this, not the class,
// so the files of the steps and of the run do not import each other.
import type { CallOptions } from '../classroom/client.ts';
import type { Logger } from '../logging/logger.ts';
import type { AuditEvent, BatchState, Lease, MappingRow, ProgressRow, Unstored } from '../mapping/index.ts';
import type { Journal } from './journal.ts';
import type { ReadLag } from './read-lag.ts';
import type { SyncDeps } from './types.ts';

export interface StepRun {
  readonly deps: SyncDeps;
  readonly lease: Lease;
  readonly log: Logger;
  readonly journal: Journal;
  readonly lag: ReadLag;
  readonly unstored: Unstored;
  readonly current: MappingRow;
  requireClassId(): string;
  callOptions(): CallOptions;
  observeLag(error?: unknown): void;
  moveTo(row: MappingRow): void;
  refresh(): Promise<MappingRow>;
  write(
    to: BatchState,
    operation: (events: AuditEvent[]) => Promise<ProgressRow | undefined>,
    facts?: { classId?: string; error?: string; detail?: Record<string, unknown> | undefined },
  ): Promise<void>;
}

// What a step outside the run's own file uses of the run (src/sync/steps.ts implements it): the
// batch as the run sees it, its calls' options, and its fenced writes. Steps take this, not the class,
// so the files of the steps and of the run do not import each other.
import type { CallOptions } from '../classroom/client.ts';
import type { Logger } from '../logging/logger.ts';
import type { AuditEvent, BatchState, Lease, MappingRow, ProgressRow, Unstored } from '../mapping/index.ts';
import type { Journal } from './journal.ts';
import type { ReadLag } from './read-lag.ts';
import type { ReadKind } from './lag-monitor.ts';
import type { SyncDeps } from './types.ts';

/** A read's timing: when its write was made, and how long after it the schedule said to read. */
export interface ReadTiming {
  kind: ReadKind;
  since: Date;
  delayMs: number;
}

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
  /** After a scheduled read (src/sync/read-schedule.ts): returns the account's new read delay. */
  readDone(timing: ReadTiming | undefined, visible: boolean): Promise<number>;
  /** A call failed other than by a lag: a later success is no tight bound on the lag. Returns 0. */
  stopMeasuring(): number;
  moveTo(row: MappingRow): void;
  refresh(): Promise<MappingRow>;
  write(
    to: BatchState,
    operation: (events: AuditEvent[]) => Promise<ProgressRow | undefined>,
    facts?: { classId?: string; error?: string; detail?: Record<string, unknown> | undefined },
  ): Promise<void>;
}

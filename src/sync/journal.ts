// The audit rows a sync run collects between two writes: every remote call it made, then the
// transition the write made, stored by the write's own statement (see src/mapping/fenced-write.ts).
import type { CallRecord } from '../classroom/client.ts';
import type { AuditEvent, BatchState } from '../mapping/index.ts';

export interface RunContext {
  attempt: number;
  workerId: string;
}

export function remoteCallEvent(call: CallRecord, context: RunContext & { classId: string | null }): AuditEvent {
  return {
    at: new Date(),
    type: 'remote_call',
    operation: call.operation,
    httpStatus: call.httpStatus ?? null,
    bodyStatus: call.bodyStatus ?? null,
    durationMs: Math.round(call.durationMs),
    outcome: call.outcome,
    error: call.error ?? null,
    attempt: context.attempt,
    workerId: context.workerId,
    classId: context.classId,
  };
}

/** Collects a run's remote calls until the write that stores them with the state they led to. */
export class Journal {
  private pending: AuditEvent[] = [];

  constructor(private readonly context: RunContext) {}

  get attempt(): number {
    return this.context.attempt;
  }

  record(call: CallRecord, classId: string | null): void {
    this.pending.push(remoteCallEvent(call, { ...this.context, classId }));
  }

  /** A transition the run made but stores with its next write (the audit trail keeps the order). */
  transition(from: BatchState, to: BatchState, classId: string | null): void {
    this.pending.push(this.transitionEvent(from, to, { classId }));
  }

  /**
   * The calls so far, plus the transition `from → to` when the state changes; empties the journal
   * (call it only for the write that stores them).
   */
  take(from: BatchState, to: BatchState, facts: { classId: string | null; error?: string | null; detail?: Record<string, unknown> | undefined }): AuditEvent[] {
    const events = this.pending;
    this.pending = [];
    if (from === to) return events;
    return [...events, this.transitionEvent(from, to, facts)];
  }

  private transitionEvent(
    from: BatchState,
    to: BatchState,
    facts: { classId: string | null; error?: string | null; detail?: Record<string, unknown> | undefined },
  ): AuditEvent {
    return {
      type: 'transition',
      fromState: from,
      toState: to,
      classId: facts.classId,
      attempt: this.context.attempt,
      workerId: this.context.workerId,
      error: facts.error ?? null,
      detail: facts.detail ?? null,
    };
  }

  get isEmpty(): boolean {
    return this.pending.length === 0;
  }
}

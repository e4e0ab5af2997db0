// Counts every call the sandbox answered (or pointedly did not), per operation and per outcome.
import type { FaultKind, SandboxOperation } from './faults.ts';

/** `ok`, `http<status>` for ordinary refusals (400, 401, 403, 404), `rateLimited`, or the fault injected. */
export type CallOutcome = 'ok' | `http${number}` | 'rateLimited' | FaultKind;
export type StatsOperation = SandboxOperation | 'other';

export interface StatsSnapshot {
  totalCalls: number;
  byOperation: Record<string, { calls: number; outcomes: Record<string, number> }>;
  faultsInjected: Record<string, number>;
}

export interface CallStats {
  record(operation: StatsOperation, outcome: CallOutcome, injected?: boolean): void;
  snapshot(): StatsSnapshot;
  reset(): void;
}

export function createStats(): CallStats {
  let snap = empty();
  return {
    record(operation, outcome, injected = false) {
      snap.totalCalls++;
      const op = (snap.byOperation[operation] ??= { calls: 0, outcomes: {} });
      op.calls++;
      op.outcomes[outcome] = (op.outcomes[outcome] ?? 0) + 1;
      if (injected) snap.faultsInjected[outcome] = (snap.faultsInjected[outcome] ?? 0) + 1;
    },
    snapshot: () => structuredClone(snap),
    reset() {
      snap = empty();
    },
  };
}

function empty(): StatsSnapshot {
  return { totalCalls: 0, byOperation: {}, faultsInjected: {} };
}

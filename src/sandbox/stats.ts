// Counts every call the sandbox answered (or pointedly did not), per operation and per outcome.
import type { FaultKind, SandboxOperation } from './faults.ts';

/** `ok`, `http<status>` for ordinary refusals (400, 401, 403, 404), `rateLimited`, or the fault injected. */
export type CallOutcome = 'ok' | `http${number}` | 'rateLimited' | FaultKind;
export type StatsOperation = SandboxOperation | 'other';

export interface StatsSnapshot {
  totalCalls: number;
  byOperation: Record<string, { calls: number; outcomes: Record<string, number> }>;
  /** Per key that authenticated (by sandbox account name): its calls and their outcomes. */
  byAccount: Record<string, { calls: number; outcomes: Record<string, number> }>;
  /** The same per key, broken down by operation: which call an account's count holds. */
  byAccountOperation: Record<string, Record<string, { calls: number; outcomes: Record<string, number> }>>;
  faultsInjected: Record<string, number>;
  /** `lateEffect` calls that have taken effect by now (late): a test waits for these, not for a time. */
  lateEffectsApplied: number;
}

export interface CallStats {
  record(operation: StatsOperation, outcome: CallOutcome, injected?: boolean, account?: string): void;
  /** A `lateEffect` call took effect. */
  lateEffectApplied(): void;
  snapshot(): StatsSnapshot;
  reset(): void;
}

export function createStats(): CallStats {
  let snap = empty();
  return {
    record(operation, outcome, injected = false, account = undefined) {
      snap.totalCalls++;
      count(snap.byOperation, operation, outcome);
      if (account !== undefined) {
        count(snap.byAccount, account, outcome);
        snap.byAccountOperation[account] ??= {};
        count(snap.byAccountOperation[account], operation, outcome);
      }
      if (injected) snap.faultsInjected[outcome] = (snap.faultsInjected[outcome] ?? 0) + 1;
    },
    lateEffectApplied() {
      snap.lateEffectsApplied++;
    },
    snapshot: () => structuredClone(snap),
    reset() {
      snap = empty();
    },
  };
}

function count(into: StatsSnapshot['byOperation'], key: string, outcome: CallOutcome): void {
  const entry = into[key] ?? { calls: 0, outcomes: {} };
  into[key] = entry;
  entry.calls++;
  entry.outcomes[outcome] = (entry.outcomes[outcome] ?? 0) + 1;
}

function empty(): StatsSnapshot {
  return { totalCalls: 0, byOperation: {}, byAccount: {}, byAccountOperation: {}, faultsInjected: {}, lateEffectsApplied: 0 };
}

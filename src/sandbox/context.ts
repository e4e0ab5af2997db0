// What the sandbox's route modules share. Built once by startSandbox.
import type { KeyState } from './accounts.ts';
import type { FaultController, SandboxOperation } from './faults.ts';
import type { RecordContext } from './records.ts';
import type { HangRegistry } from './respond.ts';
import type { CallStats } from './stats.ts';
import type { SandboxStore } from './store.ts';
import type { Clock } from '../support/clock.ts';

export interface SandboxContext {
  /** Every key accepted: the first is the primary one (`SandboxOptions.credentials`). */
  keys: readonly KeyState[];
  /** Where hand-made classes go when the request names no institute. */
  defaultInstituteId: string;
  addClassPath: string;
  editClassMethod: 'POST' | 'PUT';
  store: SandboxStore;
  faults: FaultController;
  stats: CallStats;
  hangs: HangRegistry;
  records: RecordContext;
  clock: () => number;
  /** What latency and held requests wait by. */
  timers: Pick<Clock, 'after'>;
  /**
   * Told of every remote call as it arrives, before latency and checks (chaos tests time kills by it,
   * and audit which batch each call is about).
   */
  requestListeners: Set<RequestListener>;
  /** Aborted when the sandbox closes, so latency sleeps end at once. */
  closing: AbortSignal;
  /** The seed the PRNG streams currently replay from. */
  seed(): number;
  /** Empties store, counters and rate-limit window; reseeds (same seed unless one is given). */
  reset(seed?: number): void;
}

/** What a listener learns of a remote call as it arrives: its body as parsed, and the class it names (get-class, edit-class). */
export interface ArrivingRequest {
  body: unknown;
  classId: string | undefined;
}

export type RequestListener = (operation: SandboxOperation, request: ArrivingRequest) => void;

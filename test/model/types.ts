// The vocabulary of the batch model (test/model/batch-model.ts): one batch row, the remote's classes
// of that batch, at most one run, its job and the outbox's last message. Plain data, no behaviour.
// Nothing here comes from src/: the model must not share the product's decisions, or it would
// agree with their bugs.

export type State = 'pending' | 'creating' | 'created' | 'link_enabled' | 'synced' | 'failed' | 'needs_review' | 'abandoned' | 'cancelled';
export type Name = 'A' | 'B' | 'C';
export type Subject = 'x' | 'y';
export interface Values {
  readonly name: Name;
  readonly subject: Subject;
}

/** What the row records as its last error (a small domain: only what the invariants tell apart). */
export type ErrorKind = 'edit_refused' | 'refused' | 'lost' | 'listing_refused' | 'gone' | 'ambiguous' | 'exhausted' | 'not_sent';

/** The facts of one batch_classes row (the design: Facts of a batch row). */
export interface Row {
  readonly state: State;
  /** Index into Model.remote of the stored class, null when none is stored. */
  readonly classId: number | null;
  /** create_sent_at is not null: an add-class was sent and nothing proved it made nothing. */
  readonly sent: boolean;
  readonly cancelled: boolean;
  readonly revision: number;
  readonly appliedRevision: number;
  readonly event: Values;
  readonly applied: Values | null;
  readonly className: Name;
  readonly nextClassName: Name | null;
  readonly archived: boolean;
  readonly linkEnabled: boolean;
  readonly abandonedFrom: State | null;
  readonly lastErrorKind: ErrorKind | null;
  /** The revision whose edit the remote refused: the durable record of a refusal (MODEL FINDING 6, run-class.ts). */
  readonly refusedRevision: number | null;
  /** A lease is held and unexpired. Its epoch is abstract: Run.holds says whether the run's epoch is the row's. */
  readonly leaseLive: boolean;
}

/** A class the remote made for this batch (the remote holds no other classes in the model). */
export interface RemoteClass {
  readonly name: Name;
  readonly subject: Subject;
  readonly archived: boolean;
  readonly deleted: boolean;
  readonly link: boolean;
}

/** Where a run stands: the next atomic step it takes. */
export type Pc =
  | { readonly at: 'step' }
  | { readonly at: 'add' }
  | { readonly at: 'added'; readonly outcome: 'ok' | 'refused' | 'not_sent'; readonly id: number }
  | { readonly at: 'listed'; readonly outcome: 'one' | 'none' | 'ambiguous'; readonly id: number }
  | { readonly at: 'edited'; readonly outcome: 'ok' | 'refused'; readonly revision: number; readonly values: Values; readonly name: Name | null }
  | { readonly at: 'archived'; readonly gone: boolean }
  | { readonly at: 'enabled' }
  | { readonly at: 'got' }
  | { readonly at: 'end'; readonly action: 'delay' | 'outlast' | 'retry' | 'fail'; readonly kind: ErrorKind | null };

/** The values a run holds in memory: read at the lease grant, refreshed by each write it makes. */
export interface View {
  readonly state: State;
  readonly classId: number | null;
  readonly cancelled: boolean;
  readonly revision: number;
  readonly appliedRevision: number;
  readonly archived: boolean;
  readonly event: Values;
  readonly className: Name;
  readonly nextClassName: Name | null;
}

export interface Run {
  /** The run's epoch is still the row's (no one fenced it off or took the lease over). */
  readonly holds: boolean;
  /** The run's own clock says its lease is unexpired (and it has not released it). */
  readonly local: boolean;
  readonly view: View;
  readonly pc: Pc;
}

export type MessageType = 'synced' | 'updated' | 'failed' | 'needs_review' | 'abandoned' | 'cancelled' | 'restored';
/** The outbox's newest message: its type, and for synced/updated the applied name and subject it carries. */
export interface Message {
  readonly type: MessageType;
  readonly name: Name | null;
  readonly subject: Subject | null;
}

export type Job = 'none' | 'queued' | 'active';

/** What may still happen: the bounds that keep the state space finite. */
export interface Budget {
  /** Faults: a non-ok outcome of a call, a kill, a lease expiry, a stalled job exhausted, the class deleted. */
  readonly faults: number;
  /** Changes from the integrator: batch.updated (rename, subject) and batch.cancelled. */
  readonly changes: number;
  /** Operator actions other than retry: abandon, abandon --undo, abandon --confirm-no-class. */
  readonly operator: number;
}

export interface Model {
  readonly row: Row;
  readonly remote: readonly RemoteClass[];
  readonly run: Run | null;
  readonly job: Job;
  readonly last: Message | null;
  readonly budget: Budget;
}

/** Something a step did that an invariant is about, beyond the state it left. */
export type Happening =
  | { readonly kind: 'call'; readonly op: 'add' | 'list' | 'edit' | 'get'; readonly leaseLive: boolean }
  | { readonly kind: 'intent'; readonly classMayExist: boolean }
  | { readonly kind: 'add'; readonly remoteHolds: boolean }
  | { readonly kind: 'edit'; readonly resendsRefused: boolean };

/** The deliberately broken rules the checker must catch (test/unit/batch-model.test.ts). */
export type Bug =
  | 'cancelInDoubtEndsCancelled'
  | 'renameWhileFailedAsNext'
  | 'exhaustIgnoresLease'
  | 'releaseDoesNotEndRun'
  | 'archiveGoneFails'
  | 'updatedTellsEvent'
  | 'refusedEditFails'
  | 'undoIgnoresCancel'
  | 'renameWhileAbandonedLost'
  | 'archiveRefusedEndsCancelled'
  | 'sweepSkipsChangeDue'
  | 'refusalOnlyInLastError'
  | 'failIgnoresUnsentCancel'
  | 'noClassKeepsNext'
  | 'editAppliesCancel'
  | 'refusalKeepsApplied'
  | 'refusalResends'
  | 'editDiffsStaleApplied'
  | 'refusedUnarchiveKept';

export interface Options {
  readonly bug?: Bug | undefined;
  /** Only fault-free steps (the liveness search): ok outcomes, runs, the sweep, an operator's retry. */
  readonly faultFree?: boolean;
}

/** One step from a state: its label (for the counterexample path), the state it leads to, what it did. */
export interface Step {
  readonly op: string;
  readonly next: Model;
  readonly happened: readonly Happening[];
}

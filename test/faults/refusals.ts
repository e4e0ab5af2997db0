// The fault suite's refusals: the remote saying no to a well-formed request (HTTP 200 with a body
// status 400, the sandbox's `bodyRejected`), beside the transient faults of the mix.
//
// - add-class refused: nothing was made; the batch is `failed` (never in doubt), and an operator's
//   `retry` sends it again;
// - edit-class refused: a change's edit leaves the batch where it was (a synced one stays synced)
//   with the refusal recorded; a refused link-enable or archive fails the batch (`retry` resumes it);
// - a listing refused while it settles an add-class of unknown outcome: asked again, an attempt each;
// - attempts running out while settling: a window in which every listing is refused, opened with an
//   add-class whose answer is lost (so a batch is surely in doubt), held until batches have used all
//   their attempts on the refused listing. Each must end `needs_review`, never `failed`.
import { and, count, eq, gt } from 'drizzle-orm';
import { batchClasses, batchEvents } from '../../src/db/schema/index.ts';
import type { createRuntime } from '../../src/runtime/runtime.ts';
import { type FaultConfig, type FaultRates, type RefuseKey, type RunningSandbox, mixedFaultRates } from '../../src/sandbox/index.ts';
import { trace } from './changes.ts';

type Db = ReturnType<typeof createRuntime>['database']['db'];

/** Share of add-class and edit-class calls refused, and of listings refused (each on top of the mix). */
export const REFUSAL_RATES = { addClass: 0.03, editClass: 0.03, listClasses: 0.05 } as const;

/** The run's per-operation rates: the transient mix, plus the refusals above. */
export function refusalRates(faultRate: number): NonNullable<FaultConfig['perOperation']> {
  const mix = mixedFaultRates(faultRate);
  const withRefusals = (share: number): FaultRates => ({ ...mix, bodyRejected: share });
  return {
    addClass: withRefusals(REFUSAL_RATES.addClass),
    editClass: withRefusals(REFUSAL_RATES.editClass),
    listClasses: withRefusals(REFUSAL_RATES.listClasses),
    getClass: mix,
  };
}

/** One refused add-class and one refused edit-class for sure, whatever the rates draw: the next of each. */
export function refuseNextCalls(sandbox: RunningSandbox): void {
  sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected' });
  sandbox.faults.enqueue({ operation: 'editClass', fault: 'bodyRejected' });
}

export interface ListingWindowFigures {
  /** How long every listing was refused (ms), 0 when the window never opened. */
  lastedMs: number;
  /** Batches that used up their attempts on the refused listing in the window (needs_review). */
  exhausted: number;
  /** Why the window closed: `exhausted` (the first batch in doubt left `creating`) or `cap`. */
  closedBy: 'exhausted' | 'cap' | 'never';
  /** The first batch whose add-class went unanswered in the window, and its state and attempts as it closed. */
  lostAnswer: string | undefined;
}

const WINDOW_CAP_MS = 90_000;

/**
 * Opens the window (once no key is refused, so a key window's timer is not restarted; as an
 * add-class arrives) and makes the next add-class lose its answer; closes it once the first batch whose add-class went unanswered in
 * the window has left `creating` (it used up its attempts on the refused listing: needs_review), at
 * the latest after WINDOW_CAP_MS.
 */
export async function listingWindow(sandbox: RunningSandbox, db: Db): Promise<ListingWindowFigures> {
  const keyFree = Date.now() + 15_000;
  while (anyKeyRefused(sandbox) && Date.now() < keyFree) await sleep(100);
  // Opened as an add-class arrives: it (or one just behind it) is the one whose answer is lost.
  await nextAddClass(sandbox, 10_000);
  const before = sandbox.faults.config;
  const opened = Date.now();
  const since = new Date(opened);
  setListingRates(sandbox, { bodyRejected: 1 });
  sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
  trace('listing window: every listing refused; the next add-class loses its answer');
  const { closedBy, inDoubt } = await windowEnd(db, since);
  setListingRates(sandbox, before.perOperation?.listClasses ?? {});
  const lastedMs = Date.now() - opened;
  const lost = inDoubt === undefined ? undefined : await rowSummary(db, inDoubt);
  trace(`listing window closed after ${lastedMs} ms (${closedBy}); the first batch in doubt: ${lost}`);
  return { lastedMs, exhausted: await exhaustedSince(db, since).catch(() => -1), closedBy, lostAnswer: lost };
}

/** Resolves when the sandbox receives its next add-class (or after `timeoutMs`, should none come). */
function nextAddClass(sandbox: RunningSandbox, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(), timeoutMs);
    const unsubscribe = sandbox.onRequest((operation) => {
      if (operation === 'addClass') done();
    });
    function done() {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    }
  });
}

/** Waits for the window's end (see listingWindow); says why it ended, and which batch it waited for. */
async function windowEnd(db: Db, since: Date): Promise<{ closedBy: ListingWindowFigures['closedBy']; inDoubt: string | undefined }> {
  let inDoubt: string | undefined;
  while (Date.now() - since.getTime() < WINDOW_CAP_MS) {
    await sleep(200);
    inDoubt ??= await firstUnanswered(db, since).catch(() => undefined);
    if (inDoubt === undefined) continue;
    const [row] = await db
      .select({ state: batchClasses.state })
      .from(batchClasses)
      .where(eq(batchClasses.batchId, inDoubt))
      .catch(() => []);
    if (row && row.state !== 'creating') return { closedBy: 'exhausted', inDoubt };
  }
  return { closedBy: 'cap', inDoubt };
}

/** The first batch whose add-class got no answer (its audit line says outcome_unknown) since `since`. */
async function firstUnanswered(db: Db, since: Date): Promise<string | undefined> {
  const [row] = await db
    .select({ batchId: batchClasses.batchId })
    .from(batchEvents)
    .innerJoin(batchClasses, eq(batchClasses.id, batchEvents.batchRowId))
    .where(
      and(eq(batchEvents.type, 'remote_call'), eq(batchEvents.operation, 'addClass'), eq(batchEvents.outcome, 'outcome_unknown'), gt(batchEvents.at, since)),
    )
    .orderBy(batchEvents.id)
    .limit(1);
  return row?.batchId;
}

/** Batches sent to needs_review since `since` after their listing was refused (their transition's error says so). */
async function exhaustedSince(db: Db, since: Date): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(batchEvents)
    .where(and(eq(batchEvents.type, 'transition'), eq(batchEvents.toState, 'needs_review'), gt(batchEvents.at, since), eq(batchEvents.fromState, 'creating')));
  return Number(row?.n ?? 0);
}

/** When the suite last set a key refusal (epoch ms): its `forMs` counts from then. */
let keyRefusalSetAt = 0;

/** Refuses the key (see chaos.ts) for `rule.forMs`, keeping every other setting. */
export function refuseKey(sandbox: RunningSandbox, rule: RefuseKey & { forMs: number }): void {
  sandbox.faults.set({ ...sandbox.faults.config, refuseKey: rule });
  keyRefusalSetAt = Date.now();
}

/**
 * Replaces the listing's rates only. `set` restarts a key refusal's timer: a refusal still in force
 * is set again for what is left of it, one that has lapsed is dropped.
 */
function setListingRates(sandbox: RunningSandbox, rates: FaultRates): void {
  const { refuseKey: rule, ...rest } = sandbox.faults.config;
  const left = rule?.forMs === undefined ? undefined : keyRefusalSetAt + rule.forMs - Date.now();
  const keep = rule && (left === undefined || left > 0) ? { refuseKey: left === undefined ? rule : { ...rule, forMs: Math.ceil(left) } } : {};
  sandbox.faults.set({ ...rest, ...keep, perOperation: { ...rest.perOperation, listClasses: rates } });
  if (keep.refuseKey) keyRefusalSetAt = Date.now();
}

async function rowSummary(db: Db, batchId: string): Promise<string> {
  const [row] = await db
    .select({ state: batchClasses.state, attempts: batchClasses.attempts, kind: batchClasses.lastErrorKind })
    .from(batchClasses)
    .where(eq(batchClasses.batchId, batchId))
    .catch(() => []);
  return `${batchId}: ${row ? `${row.state} after ${row.attempts} attempt(s), last error ${row.kind}` : 'not read'}`;
}

function anyKeyRefused(sandbox: RunningSandbox): boolean {
  return Object.values(sandbox.state({ classes: false }).accounts).some((a) => a.keyRefused);
}

/** Refusals the sandbox injected, per operation (from its counts). */
export function refusalsInjected(sandbox: RunningSandbox): Record<string, number> {
  const calls = sandbox.state({ classes: false }).calls.byOperation;
  return Object.fromEntries(Object.entries(calls).map(([op, c]) => [op, c.outcomes.bodyRejected ?? 0]));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

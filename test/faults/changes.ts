// The fault suite's change driver: while the fleet syncs under faults, batches are renamed, given a
// new subject or room, cancelled, reopened and restated (a batch.created with a higher version), at
// random moments of their life: right after they are published (before any add-class), as their
// add-class reaches the remote (often in doubt: its answer lost, its worker killed), while their
// class is being set up, and once they are at rest. Deliberately stale events (an older or the same
// version, or the original batch.created posted again) follow some of them.
//
// Each batch's script (which changes, in which order, at which moment) is drawn up front from the
// suite's seed; when each lands depends on the run. Versions grow with each real event of a batch,
// and the driver keeps, per batch, what the last real event leaves it expecting: cancelled, or
// synced with the newest name, subject and room, at the highest version published.
import { inArray } from 'drizzle-orm';
import { batchClasses } from '../../src/db/schema/index.ts';
import { type PublishDeps, type PublishOutcome, publishBatches } from '../../src/intake/publish.ts';
import type { createRuntime } from '../../src/runtime/runtime.ts';
import type { startSandbox } from '../../src/sandbox/index.ts';
import { deriveSeed, mulberry32 } from '../../src/sandbox/random.ts';

type Db = ReturnType<typeof createRuntime>['database']['db'];
type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

/** The batch.created event a batch was published with (its class carries `chaosRef`, the batch id). */
export interface CreatedEvent {
  batchId: string;
  name: string;
  subject: string;
  instituteId?: string;
  chaosRef: string;
  version?: number;
}

/** What the batch's last real event leaves it expecting. */
export interface Expected {
  cancelled: boolean;
  name: string;
  subject: string;
  /** The extra class field `room`, once an event set it. */
  room: string | undefined;
  /** The highest version published for it (null: none ever carried one). */
  version: number | null;
}

/**
 * published  right after the batch is published (its add-class not sent yet): first steps only
 * sent       once its add-class may have been sent (the row seen past `pending`): first steps only
 * doubt      once its add-class has gone unanswered past the request timeout (the row `creating` for
 *            over 1.2 s: the answer lost or hung, or the worker killed); at rest if that never happens
 * rest       once the batch is at rest (synced or cancelled, nothing left to apply; or held)
 * soon       0-300 ms after the previous step, while that one is being applied
 * later      0.5-4 s after the previous step
 */
type Moment = 'published' | 'sent' | 'doubt' | 'rest' | 'soon' | 'later';
type Kind = 'rename' | 'subject' | 'cancel' | 'restate';
type Stale = 'older' | 'same' | 'repost';

interface Step {
  kind: Kind;
  moment: Moment;
  delayMs: number;
  /** With `room`: the update also sets the extra class field. */
  room: boolean;
  /** A stale event published right after this one. */
  stale: Stale | undefined;
  /** Which type a stale `older`/`same` event has. */
  staleType: 'batch.updated' | 'batch.cancelled' | 'batch.created';
  /** Which version an `older` stale event carries, as a share of the versions below the current one. */
  staleShare: number;
}

interface Script {
  index: number;
  created: CreatedEvent;
  steps: Step[];
  next: number;
  /** Epoch ms from which the next step may go (its delay counted from the previous step). */
  notBefore: number;
  seenSent: boolean;
  /** Since when (epoch ms) the driver has seen the row `creating`, in its current spell. */
  creatingSince: number | undefined;
  expected: Expected;
}

export interface ChangeFigures {
  batchesChanged: number;
  /** Real events published (renames + subject changes + cancels + restates). */
  published: number;
  renames: number;
  subjectChanges: number;
  cancels: number;
  /** Real events that reopened a batch the previous one cancelled. */
  reopenings: number;
  restates: number;
  /** The batch's state (as the driver last read it, at most ~100 ms before) when each real event was published. */
  landedWhile: Record<string, number>;
  /** Real events published within 5 s after a fleet kill (workers SIGKILLed right after an add-class). */
  afterFleetKill: number;
  stale: { published: number; answeredStale: number; answeredDuplicate: number; answeredOtherwise: string[] };
  /** Real events not answered `applied` (a retry after an error may answer `stale`: its first try landed). */
  realNotApplied: string[];
  /** Publishes that threw (Postgres down or cut) and were sent again. */
  publishRetries: number;
  /** Steps never published: the batch never reached their moment before the heal phase. */
  dropped: number;
}

export interface ChangeDriverInput {
  seed: number;
  created: readonly CreatedEvent[];
  deps: PublishDeps;
  db: Db;
  sandbox: Sandbox;
  /** When the suite last killed the whole fleet (epoch ms), if it did. */
  lastFleetKill: () => number | undefined;
  /** Share of batches that change (default 0.35). */
  share?: number;
}

const AT_REST = new Set(['synced', 'cancelled']);
const HELD = new Set(['needs_review', 'failed', 'abandoned']);

/** The name a change of batch `index` gives it at `version` (the suite's template is `{name}`). */
function changedName(index: number, version: number): string {
  return `Chaos batch ${index} v${version}`;
}

export class ChangeDriver {
  private readonly scripts: Script[];
  private readonly figures: ChangeFigures;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private unsubscribe: (() => void) | undefined;
  private failure: unknown;

  constructor(private readonly input: ChangeDriverInput) {
    const random = mulberry32(deriveSeed(input.seed, 0xc4a9));
    this.scripts = input.created.map((created, index) => ({
      index,
      created,
      steps: random() < (input.share ?? 0.35) ? drawSteps(random) : [],
      next: 0,
      notBefore: 0,
      seenSent: false,
      creatingSince: undefined,
      expected: {
        cancelled: false,
        name: created.name,
        subject: created.subject,
        room: undefined,
        version: created.version ?? null,
      },
    }));
    this.figures = {
      batchesChanged: this.scripts.filter((s) => s.steps.length > 0).length,
      published: 0,
      renames: 0,
      subjectChanges: 0,
      cancels: 0,
      reopenings: 0,
      restates: 0,
      landedWhile: {},
      afterFleetKill: 0,
      stale: { published: 0, answeredStale: 0, answeredDuplicate: 0, answeredOtherwise: [] },
      realNotApplied: [],
      publishRetries: 0,
      dropped: 0,
    };
  }

  /** Starts driving, right after the batches were published: the `published` steps go first. */
  start(): void {
    // An add-class reaching the remote wakes the driver at once: a batch whose step waits for its
    // add-class to be sent is changed while that add-class is still in flight.
    this.unsubscribe = this.input.sandbox.onRequest((operation) => {
      if (operation === 'addClass') this.wake?.();
    });
    this.loop = this.run().catch((error) => {
      this.failure = error;
    });
  }

  /** Stops: nothing more is published (the step being published, if any, finishes first). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    this.unsubscribe?.();
    await this.loop;
  }

  /** Steps still to publish. */
  get remaining(): number {
    return this.scripts.reduce((sum, s) => sum + (s.steps.length - s.next), 0);
  }

  /** Waits (until `deadline`, epoch ms) for every step to be published, then stops. */
  async finish(deadline: number, meanwhile: () => void): Promise<ChangeFigures> {
    while (this.remaining > 0 && this.failure === undefined && Date.now() < deadline) {
      meanwhile();
      await sleep(100);
    }
    await this.stop();
    if (this.failure !== undefined) throw this.failure;
    this.figures.dropped = this.remaining;
    return this.figures;
  }

  /** What each batch's last real event leaves it expecting, by batch id. */
  expected(): Map<string, Expected> {
    return new Map(this.scripts.map((s) => [s.created.batchId, s.expected]));
  }

  private async run(): Promise<void> {
    for (const s of this.scripts) if (s.steps[0]?.moment === 'published') await this.fire(s, undefined);
    while (!this.stopped && this.remaining > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 100);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wake = done;
      });
      this.wake = undefined;
      if (this.stopped) break;
      const rows = await this.readRows();
      if (!rows) continue;
      for (const s of this.scripts) {
        if (this.stopped) break;
        const row = rows.get(s.created.batchId);
        if (row && row.state !== 'pending') s.seenSent = true;
        if (row) s.creatingSince = row.state === 'creating' ? (s.creatingSince ?? Date.now()) : undefined;
        if (row && this.due(s, row)) await this.fire(s, row.state);
      }
    }
  }

  private due(s: Script, row: RowState): boolean {
    const step = s.steps[s.next];
    if (!step || Date.now() < s.notBefore) return false;
    switch (step.moment) {
      case 'published':
        return true;
      case 'sent':
        return s.seenSent;
      case 'doubt':
        return (s.creatingSince !== undefined && Date.now() - s.creatingSince >= IN_DOUBT_MS) || atRest(row);
      case 'rest':
        return atRest(row);
      default:
        return true;
    }
  }

  /** Rows of the batches that still have steps; undefined while PostgreSQL does not answer. */
  private async readRows(): Promise<Map<string, RowState> | undefined> {
    const ids = this.scripts.filter((s) => s.next < s.steps.length).map((s) => s.created.batchId);
    if (ids.length === 0) return new Map();
    try {
      const rows = await this.input.db
        .select({
          batchId: batchClasses.batchId,
          state: batchClasses.state,
          revision: batchClasses.revision,
          appliedRevision: batchClasses.appliedRevision,
        })
        .from(batchClasses)
        .where(inArray(batchClasses.batchId, ids));
      return new Map(rows.map((r) => [r.batchId, r]));
    } catch {
      return undefined;
    }
  }

  /** Publishes the script's next step (and the stale event that may follow it). */
  private async fire(s: Script, state: string | undefined): Promise<void> {
    const step = s.steps[s.next]!;
    const version = (s.expected.version ?? 1) + 1;
    const event = this.realEvent(s, step, version);
    const landed = state ?? 'pending';
    this.figures.landedWhile[landed] = (this.figures.landedWhile[landed] ?? 0) + 1;
    const killedAt = this.input.lastFleetKill();
    if (killedAt !== undefined && Date.now() - killedAt < 5_000) this.figures.afterFleetKill += 1;
    trace(`${s.created.batchId} v${version} ${step.kind} (${step.moment}) while ${landed}`);
    const { outcome, retried } = await this.publish(event);
    trace(`${s.created.batchId} v${version} answered ${outcome.ok ? `${outcome.outcome}, ${outcome.state}` : 'invalid'}`);
    if (!(outcome.ok && (outcome.outcome === 'applied' || (retried && outcome.outcome === 'stale')))) {
      this.figures.realNotApplied.push(`${s.created.batchId} v${version} ${step.kind}: ${JSON.stringify(outcome)}`);
    }
    this.record(s, step, event, version);
    s.next += 1;
    const following = s.steps[s.next];
    if (following) s.notBefore = Date.now() + following.delayMs;
    if (step.stale) await this.publishStale(s, step, version);
  }

  private realEvent(s: Script, step: Step, version: number): Record<string, unknown> {
    const { batchId, instituteId } = s.created;
    const target = { batchId, ...(instituteId ? { instituteId } : {}), version };
    const room = step.room ? { room: `Room ${version}` } : {};
    switch (step.kind) {
      case 'rename':
        return { type: 'batch.updated', ...target, name: changedName(s.index, version), ...room };
      case 'subject':
        return { type: 'batch.updated', ...target, subject: SUBJECTS[version % SUBJECTS.length], ...room };
      case 'cancel':
        return { type: 'batch.cancelled', ...target };
      case 'restate':
        return {
          ...target,
          name: changedName(s.index, version),
          subject: SUBJECTS[version % SUBJECTS.length],
          chaosRef: batchId,
          room: `Room ${version}`,
        };
    }
  }

  /** What the event leaves the batch expecting, mirroring docs/changes.md. */
  private record(s: Script, step: Step, event: Record<string, unknown>, version: number): void {
    const e = s.expected;
    this.figures.published += 1;
    if (step.kind === 'cancel') {
      this.figures.cancels += 1;
      e.cancelled = true;
    } else {
      if (e.cancelled) this.figures.reopenings += 1;
      e.cancelled = false;
      if (step.kind === 'rename') this.figures.renames += 1;
      if (step.kind === 'subject') this.figures.subjectChanges += 1;
      if (step.kind === 'restate') this.figures.restates += 1;
      if (typeof event.name === 'string') e.name = event.name;
      if (typeof event.subject === 'string') e.subject = event.subject;
      if (typeof event.room === 'string') e.room = event.room;
    }
    e.version = version;
  }

  private async publishStale(s: Script, step: Step, current: number): Promise<void> {
    const { batchId, instituteId } = s.created;
    const older = 1 + Math.floor(step.staleShare * (current - 1));
    const version = step.stale === 'same' ? current : older;
    const target = { batchId, ...(instituteId ? { instituteId } : {}), version };
    const event: Record<string, unknown> =
      step.stale === 'repost'
        ? { ...s.created }
        : step.staleType === 'batch.cancelled'
          ? { type: 'batch.cancelled', ...target }
          : step.staleType === 'batch.updated'
            ? { type: 'batch.updated', ...target, name: `Chaos batch ${s.index} stale v${version}`, subject: 'Stale subject', room: 'Stale room' }
            : { ...target, name: `Chaos batch ${s.index} stale v${version}`, subject: 'Stale subject', chaosRef: batchId, room: 'Stale room' };
    this.figures.stale.published += 1;
    const { outcome } = await this.publish(event);
    if (outcome.ok && outcome.outcome === 'stale') this.figures.stale.answeredStale += 1;
    else if (outcome.ok && outcome.outcome === 'duplicate' && step.stale === 'repost' && s.created.version === undefined)
      this.figures.stale.answeredDuplicate += 1;
    else this.figures.stale.answeredOtherwise.push(`${batchId} ${step.stale} v${version} (current v${current}): ${JSON.stringify(outcome)}`);
  }

  /** Publishes one event, again while PostgreSQL does not answer (down, or the connection cut). */
  private async publish(event: Record<string, unknown>): Promise<{ outcome: PublishOutcome; retried: boolean }> {
    const deadline = Date.now() + 60_000;
    let retried = false;
    for (;;) {
      try {
        const [outcome] = await publishBatches(this.input.deps, [event]);
        if (!outcome) throw new Error('publishBatches gave no answer');
        return { outcome, retried };
      } catch (error) {
        if (Date.now() > deadline || this.stopped) throw error;
        this.figures.publishRetries += 1;
        trace(`publish failed (${error instanceof Error ? error.message : String(error)}); again`);
        retried = true;
        await sleep(250);
      }
    }
  }
}

interface RowState {
  batchId: string;
  state: string;
  revision: number;
  appliedRevision: number;
}

const SUBJECTS = ['Physics', 'Chemistry', 'Biology', 'Mathematics'];

/** Past the suite's request timeout (CLASSROOM_TIMEOUT=1s): an add-class still unsettled is in doubt. */
const IN_DOUBT_MS = 1_200;

/** Synced or cancelled with nothing left to apply, or held (needs_review, failed, abandoned). */
function atRest(row: RowState): boolean {
  return HELD.has(row.state) || (AT_REST.has(row.state) && row.revision === row.appliedRevision);
}

/** One batch's script: 1-4 changes, a cancel often followed by a reopening. */
function drawSteps(random: () => number): Step[] {
  const count = 1 + Math.floor(random() * random() * 4);
  const steps: Step[] = [];
  let cancelled = false;
  for (let k = 0; k < count; k++) {
    const r = random();
    const kind: Kind = cancelled ? (r < 0.75 ? 'rename' : 'restate') : r < 0.45 ? 'rename' : r < 0.8 ? 'cancel' : r < 0.9 ? 'subject' : 'restate';
    cancelled = kind === 'cancel';
    const m = random();
    const first: Moment = m < 0.25 ? 'published' : m < 0.55 ? 'sent' : m < 0.75 ? 'doubt' : 'rest';
    const moment: Moment = k === 0 ? first : m < 0.3 ? 'soon' : m < 0.6 ? 'later' : 'rest';
    const delayMs = moment === 'soon' ? Math.floor(random() * 300) : moment === 'later' ? 500 + Math.floor(random() * 3_500) : 0;
    const s = random();
    const stale: Stale | undefined = s < 0.15 ? 'older' : s < 0.25 ? 'same' : s < 0.32 ? 'repost' : undefined;
    const t = random();
    const staleType = t < 0.5 ? 'batch.updated' : t < 0.8 ? 'batch.cancelled' : 'batch.created';
    steps.push({ kind, moment, delayMs, room: random() < 0.4, stale, staleType, staleShare: random() });
  }
  return steps;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const traced: string[] = [];

/**
 * The run's phases and changes as they happen, kept (the last 300) for `recentTrace`; with
 * FAULT_SUITE_TRACE=1 also written to stderr at once.
 */
export function trace(message: string): void {
  const line = `${new Date().toISOString().slice(11, 23)} fault suite: ${message}`;
  traced.push(line);
  if (traced.length > 300) traced.shift();
  if (process.env.FAULT_SUITE_TRACE === '1') process.stderr.write(`${line}\n`);
}

/** What the run was doing last: printed when the test fails (a timeout included). */
export function recentTrace(): string[] {
  return [...traced];
}

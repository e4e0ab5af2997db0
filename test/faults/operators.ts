// The fault suite's operator: `retry`, `abandon` and `abandon --undo` at random moments of some
// batches' lives, beside the faults and the integrator's changes, through the same code the CLI runs
// (src/sync/retry-batches.ts, abandon-batches.ts). Like the change driver, each batch's script is drawn
// up front from the suite's seed; when each step lands depends on the run. A step the product refuses
// (abandoning a batch with a class, or one a worker holds; retrying one that is not held) is counted,
// not an error: refusing it is the product's answer. Some scripts end with the batch abandoned on
// purpose: the heal phase leaves those abandoned and undoes every other abandon.
import { inArray } from 'drizzle-orm';
import { batchClasses } from '../../src/db/schema/index.ts';
import { abandonBatches, undoAbandon } from '../../src/sync/abandon-batches.ts';
import type { BatchKey } from '../../src/sync/keys.ts';
import { retryBatches } from '../../src/sync/retry-batches.ts';
import type { createRuntime } from '../../src/runtime/runtime.ts';
import { deriveSeed, mulberry32 } from '../../src/sandbox/random.ts';
import { trace } from './changes.ts';

type Runtime = ReturnType<typeof createRuntime>;

/** What `retry` and `abandon` need: the database, the queue, a logger. */
export interface OperatorDeps {
  db: Runtime['database']['db'];
  queue: Runtime['queue'];
  logger: Runtime['logger'];
}

type Kind = 'abandon' | 'undo' | 'retry';
/**
 * published  at once, while most batches wait for their first run (pending, no lease)
 * sent       once the batch is seen past `pending`
 * held       once the batch is seen `failed` or `needs_review` (an operator's turn)
 * soon/later 0-300 ms / 0.5-4 s after the previous step
 */
type Moment = 'published' | 'sent' | 'held' | 'soon' | 'later';

interface Step {
  kind: Kind;
  moment: Moment;
  delayMs: number;
}

interface Script {
  key: BatchKey;
  steps: Step[];
  next: number;
  notBefore: number;
  seenSent: boolean;
  /** The script ends with an abandon: the heal phase leaves the batch abandoned. */
  leave: boolean;
}

export interface OperatorFigures {
  batchesScripted: number;
  /** Each action and how it ended: `abandon:abandoned`, `abandon:refused`, `undo:restored→pending`, `retry:failed→pending`, … */
  actions: Record<string, number>;
  /** Actions that threw (PostgreSQL or Redis down) and were made again. */
  errors: number;
  /** Steps never taken: the batch never reached their moment before the heal phase. */
  dropped: number;
}

/** Share of batches an operator acts on. */
const SHARE = 0.15;
const HELD = new Set(['failed', 'needs_review']);

export class OperatorDriver {
  private readonly scripts: Script[];
  private readonly figures: OperatorFigures;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly deps: OperatorDeps,
    seed: number,
    keys: readonly BatchKey[],
  ) {
    const random = mulberry32(deriveSeed(seed, 0x0be7));
    this.scripts = keys.flatMap((key) => {
      const draw = random();
      const steps = drawSteps(random);
      return draw < SHARE ? [{ key, steps, next: 0, notBefore: 0, seenSent: false, leave: steps.at(-1)?.kind === 'abandon' }] : [];
    });
    this.figures = { batchesScripted: this.scripts.length, actions: {}, errors: 0, dropped: 0 };
  }

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<OperatorFigures> {
    this.stopped = true;
    await this.loop;
    this.figures.dropped = this.scripts.reduce((sum, s) => sum + (s.steps.length - s.next), 0);
    return this.figures;
  }

  /** Batches whose script ends abandoned on purpose (the heal phase leaves them so). */
  leftAbandoned(): Set<string> {
    return new Set(this.scripts.filter((s) => s.leave).map((s) => s.key.batchId));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const pending = this.scripts.filter((s) => s.next < s.steps.length);
      if (pending.length === 0) return;
      const rows = await this.deps.db
        .select({ batchId: batchClasses.batchId, state: batchClasses.state })
        .from(batchClasses)
        .where(
          inArray(
            batchClasses.batchId,
            pending.map((s) => s.key.batchId),
          ),
        )
        .catch(() => undefined);
      const states = new Map((rows ?? []).map((r) => [r.batchId, r.state]));
      for (const s of pending) {
        if (this.stopped) break;
        const state = states.get(s.key.batchId);
        if (state !== undefined && state !== 'pending') s.seenSent = true;
        if (state !== undefined && this.due(s, state)) await this.act(s);
      }
      await sleep(100);
    }
  }

  private due(s: Script, state: string): boolean {
    const step = s.steps[s.next];
    if (!step || Date.now() < s.notBefore) return false;
    if (step.moment === 'sent') return s.seenSent;
    if (step.moment === 'held') return HELD.has(state);
    return true;
  }

  /** Takes the script's next step; one that throws (a server down) is taken again on a later pass. */
  private async act(s: Script): Promise<void> {
    const step = s.steps[s.next]!;
    try {
      const outcome = await operate(this.deps, step.kind, s.key);
      this.figures.actions[`${step.kind}:${outcome}`] = (this.figures.actions[`${step.kind}:${outcome}`] ?? 0) + 1;
      trace(`operator: ${step.kind} ${s.key.batchId}: ${outcome}`);
    } catch (error) {
      this.figures.errors += 1;
      trace(`operator: ${step.kind} ${s.key.batchId} threw (${error instanceof Error ? error.message : String(error)}); again later`);
      s.notBefore = Date.now() + 500;
      return;
    }
    s.next += 1;
    const following = s.steps[s.next];
    if (following) s.notBefore = Date.now() + following.delayMs;
  }
}

/** One operator action on one batch, as the CLI makes it; what it did, in a word or two. */
export async function operate(deps: OperatorDeps, kind: Kind, key: BatchKey): Promise<string> {
  if (kind === 'abandon') {
    const [result] = await abandonBatches(deps, [key], { reason: 'fault suite: an operator gave it up' });
    return `${result?.outcome ?? 'none'}${result?.mayHaveClass ? ' (may have a class)' : ''}`;
  }
  if (kind === 'undo') {
    const [result] = await undoAbandon(deps, [key], { reason: 'fault suite: an operator took it back' });
    return result?.outcome === 'restored' ? `restored→${result.to}` : (result?.outcome ?? 'none');
  }
  try {
    const [result] = await retryBatches(deps, { keys: [key] });
    if (!result) return 'none';
    return result.from === result.to ? `nothing (${result.from})` : `${result.from}→${result.to}`;
  } catch (error) {
    if (error instanceof Error && error.name === 'BatchAbandonedError') return 'refused (abandoned)';
    throw error;
  }
}

/** One batch's script: give it up (and, mostly, take that back), retry it once held, or both. */
function drawSteps(random: () => number): Step[] {
  const r = random();
  const m = random();
  const later = (): Step => ({ kind: 'undo', moment: 'later', delayMs: 500 + Math.floor(random() * 3_500) });
  if (r < 0.45) {
    const first: Moment = m < 0.5 ? 'published' : m < 0.75 ? 'sent' : 'held';
    return random() < 0.75 ? [{ kind: 'abandon', moment: first, delayMs: 0 }, later()] : [{ kind: 'abandon', moment: first, delayMs: 0 }];
  }
  if (r < 0.8) return [{ kind: 'retry', moment: m < 0.7 ? 'held' : 'sent', delayMs: 0 }];
  return [
    { kind: 'abandon', moment: 'held', delayMs: 0 },
    { kind: 'undo', moment: 'soon', delayMs: Math.floor(random() * 300) },
    { kind: 'retry', moment: 'held', delayMs: 0 },
  ];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

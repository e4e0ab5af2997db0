// Two paths racing over one batch, interleaved by fast-check's scheduler: a run whose every remote
// call is parked at a gate before it leaves and after its answer, and other paths (a cancel, an
// update, exhaustion, reconciliation, a retry, a takeover...) that each land at one of those gates.
// At each gate the scheduler picks: the run goes on, or one waiting path lands now (whole, while the
// run waits: between the run's read and its write, say). Paths still waiting when the run ends land then.
import type fc from 'fast-check';
import type { Action, RaceContext } from './actions.ts';
import { checkInvariants } from './invariants.ts';
import { gatedClient } from './clients.ts';
import type { Model, RealSystem } from './real-system.ts';

export class Interleaver implements RaceContext {
  private readonly waiting: Array<{ label: string; go: () => Promise<void> }> = [];
  private parkedSignal: AbortSignal | undefined;
  private offered: (() => void) | undefined;

  constructor(private readonly s: fc.Scheduler) {}

  add(label: string, go: () => Promise<void>): void {
    this.waiting.push({ label, go });
  }

  /** The run's own signal while it is parked at a gate (aborted once its heartbeat finds the lease gone). */
  parked(): AbortSignal | undefined {
    return this.parkedSignal;
  }

  /** The run reached `label`: waiting paths may land here, one at a time, before it goes on. */
  readonly gate = async (label: string, signal: AbortSignal | undefined): Promise<void> => {
    this.parkedSignal = signal;
    try {
      for (;;) {
        const chosen = await this.choose(label);
        const landing = chosen < 0 ? undefined : this.waiting.splice(chosen, 1)[0];
        if (!landing) return;
        await landing.go();
      }
    } finally {
      this.parkedSignal = undefined;
    }
  };

  /** The paths that never found a gate (the run ended first) land now, in order. */
  async rest(): Promise<void> {
    for (let next = this.waiting.shift(); next; next = this.waiting.shift()) await next.go();
  }

  /** Resolves when the next choice is offered to the scheduler. */
  nextOffer(): Promise<void> {
    return new Promise((resolve) => (this.offered = resolve));
  }

  /**
   * One decision of the scheduler: a task per choice, the first released wins (the others, released
   * later, are ignored). -1: the run goes on.
   */
  private choose(label: string): Promise<number> {
    if (this.waiting.length === 0) return Promise.resolve(-1);
    return new Promise((resolve) => {
      let decided = false;
      const offer = (choice: number, what: string) =>
        void this.s.schedule(Promise.resolve(), what).then(() => {
          if (decided) return;
          decided = true;
          resolve(choice);
        });
      offer(-1, `run goes on ${label}`);
      for (const [i, w] of this.waiting.entries()) offer(i, `${w.label} lands ${label}`);
      this.offered?.();
    });
  }
}

/** A run racing `others`, in the order the scheduler picks; the invariants checked once all have ended. */
export class RaceStep implements fc.AsyncCommand<Model, RealSystem> {
  constructor(readonly others: readonly Action[]) {}

  check(): boolean {
    return true;
  }

  async run(m: Model, r: RealSystem): Promise<void> {
    const s = r.scheduler;
    if (!s) throw new Error('a race needs the scheduler of scheduledModelRun');
    const lanes = new Interleaver(s);
    for (const other of this.others) lanes.add(other.name, () => other.act(m, r, lanes));
    const race = (async () => {
      const end = await r.startRun((client) => gatedClient(client, lanes.gate)).done;
      r.count(`raced run → ${end.state ?? end.kind}`);
      await lanes.rest();
    })();
    await drive(s, lanes, race);
    await checkInvariants(r, m, this.toString());
  }

  toString(): string {
    return `race(run ⟂ ${this.others.map((o) => o.name).join(', ')})`;
  }
}

/**
 * Releases the scheduler's tasks (the gates' choices) until `race` ends. fc.scheduledModelRun runs a
 * command as a scheduled task and releases nothing else until that task is over, so a command that
 * waits on its own scheduled tasks must release them itself; the scheduler still picks which one.
 */
async function drive(s: fc.Scheduler, lanes: Interleaver, race: Promise<void>): Promise<void> {
  let over = false;
  const ended = race.finally(() => {
    over = true;
  });
  while (!over) {
    if (s.count() > 0) await s.waitOne();
    else await Promise.race([ended, lanes.nextOffer()]);
  }
  await ended;
}

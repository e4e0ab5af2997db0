// The commands of the model-based test and how fast-check draws them: one action at a time
// (`Step`, for fc.asyncModelRun) or a run racing other paths (`RaceStep`, for fc.scheduledModelRun),
// each followed by every invariant.
import fc from 'fast-check';
import type { FaultKind, SandboxOperation } from '../../src/sandbox/index.ts';
import * as act from './actions.ts';
import type { PauseAt } from './clients.ts';
import { checkInvariants } from './invariants.ts';
import { RaceStep } from './race.ts';
import type { Model, RealSystem } from './real-system.ts';

export class Step implements fc.AsyncCommand<Model, RealSystem> {
  constructor(readonly action: act.Action) {}

  check(): boolean {
    return true;
  }

  async run(m: Model, r: RealSystem): Promise<void> {
    r.takeViewAfterChange();
    await this.action.act(m, r);
    // A path whose rule read the view last (actions.ts `ruled`) hands it over: nothing has run since.
    await checkInvariants(r, m, this.toString(), r.takeViewAfterChange());
  }

  toString(): string {
    return this.action.name;
  }
}

/** Distinct enough that no two are taken for a rewriting of one another (src/sync/matching.ts). */
const NAMES = ['Algebra class', 'Biology class', 'Chemistry class', 'Drama class'];
const SUBJECTS = ['Logic', 'Maths', 'Physics'];

const name = fc.constantFrom(...NAMES);
const subject = fc.constantFrom(...SUBJECTS);

const intake: fc.Arbitrary<act.Action> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ name, subject }).map((v) => act.intake('created', v)) },
  {
    weight: 3,
    // A batch.updated must name something to change (the schema refuses an empty one).
    arbitrary: fc.oneof(fc.record({ name }), fc.record({ subject }), fc.record({ name, subject })).map((values) => act.intake('updated', values)),
  },
  { weight: 2, arbitrary: fc.constant(act.intake('cancelled')) },
);

// add-class is where duplicates are born, the listing is how they are avoided, edit-class carries
// changes and archives: weigh them up.
const operation = fc.oneof(
  { weight: 4, arbitrary: fc.constant<SandboxOperation>('addClass') },
  { weight: 3, arbitrary: fc.constant<SandboxOperation>('listClasses') },
  { weight: 3, arbitrary: fc.constant<SandboxOperation>('editClass') },
  { weight: 1, arbitrary: fc.constant<SandboxOperation>('getClass') },
);
// lostResponse: made, answer lost; bodyRejected: refused, nothing made; error5xx: nothing made, outcome unknown to the client.
const faultKind = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<FaultKind>('lostResponse', 'bodyRejected') },
  { weight: 1, arbitrary: fc.constantFrom<FaultKind>('error5xx', 'error5xxAfterStore', 'throttle') },
);
const fault = fc.record({ operation, kind: faultKind }).map(({ operation: op, kind }) => act.fault(op, kind));

const crash = fc
  .record({ operation, at: fc.constantFrom<PauseAt>('beforeCall', 'afterFencedWrite', 'afterEffect'), zombie: fc.boolean() })
  .map(({ operation: op, at, zombie }) => {
    // Only add-class has a recovery point written in its beforeSend (the `creating` write).
    const where: PauseAt = at === 'afterFencedWrite' && op !== 'addClass' ? 'beforeCall' : at;
    return act.crash(op, where, zombie);
  });

/** What any path does (not a run racing another: see `raceArb`). */
const actionArb: fc.Arbitrary<act.Action> = fc.oneof(
  { weight: 6, arbitrary: intake },
  { weight: 6, arbitrary: fc.constant(act.run) },
  { weight: 4, arbitrary: fault },
  { weight: 2, arbitrary: crash },
  { weight: 1, arbitrary: fc.constant(act.wake) },
  { weight: 2, arbitrary: fc.constant(act.retry) },
  { weight: 1, arbitrary: fc.constant(act.abandon) },
  { weight: 1, arbitrary: fc.constant(act.undo) },
  { weight: 1, arbitrary: fc.constant(act.exhaust) },
  { weight: 1, arbitrary: fc.constant(act.reconcile) },
  { weight: 1, arbitrary: fc.constant(act.sweep) },
  { weight: 1, arbitrary: fc.constant(act.deleteClass) },
  { weight: 1, arbitrary: fc.constantFrom(act.foreignClass, act.foreignGone) },
);

/** What may land while a run is under way (not another run through the queue: that one is just told "busy"). */
const racingArb: fc.Arbitrary<act.Action> = fc.oneof(
  { weight: 6, arbitrary: intake },
  { weight: 2, arbitrary: fault },
  { weight: 1, arbitrary: fc.constant(act.wake) },
  { weight: 2, arbitrary: fc.constant(act.retry) },
  { weight: 1, arbitrary: fc.constant(act.abandon) },
  { weight: 1, arbitrary: fc.constant(act.undo) },
  { weight: 2, arbitrary: fc.constant(act.exhaust) },
  { weight: 2, arbitrary: fc.constant(act.reconcile) },
  { weight: 1, arbitrary: fc.constant(act.sweep) },
  { weight: 1, arbitrary: fc.constant(act.deleteClass) },
  { weight: 1, arbitrary: fc.constant(act.takeover) },
  { weight: 1, arbitrary: fc.constantFrom(act.foreignClass, act.foreignGone) },
);

const stepArb = actionArb.map((a) => new Step(a));
const raceArb = fc.array(racingArb, { minLength: 1, maxLength: 2 }).map((others) => new RaceStep(others));

/** A sequence's setting: read lag (the sandbox's and the runs' SYNC_READ_LAG alike), mostly none. */
const lagArb = fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(30) });

export interface Sequence {
  lagMs: number;
  cmds: Iterable<fc.AsyncCommand<Model, RealSystem>>;
}

/** One action after another (fc.asyncModelRun). */
export function sequentialArb(maxCommands: number): fc.Arbitrary<Sequence> {
  return fc.record({ lagMs: lagArb, cmds: fc.commands([stepArb], { maxCommands, size: 'medium' }) });
}

/** Actions and runs racing other paths (fc.scheduledModelRun). */
export function racingArbOf(maxCommands: number): fc.Arbitrary<Sequence> {
  const cmd = fc.oneof({ weight: 3, arbitrary: stepArb }, { weight: 2, arbitrary: raceArb });
  return fc.record({ lagMs: lagArb, cmds: fc.commands([cmd], { maxCommands, size: 'medium' }) });
}

/** The model at the start of every sequence: the batch created at version 1. */
export function initialModel(): Model {
  return { version: 1, name: NAMES[0]!, subject: SUBJECTS[0]!, cancelWanted: false, classDeleted: false };
}

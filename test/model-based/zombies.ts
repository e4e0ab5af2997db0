// Zombies: runs paused mid-way whose lease ran out (by SQL) while they slept, woken later. A frozen
// process wakes to find its lease gone by its own clock; here the run's heartbeat finds it (within
// a third of the lease), and a zombie is woken only once it has.
import type { BatchRow } from '../../src/db/schema/index.ts';
import { type RealSystem, SETTINGS } from './real-system.ts';

export interface Zombie {
  workerId: string;
  resume(): void;
  run: Promise<unknown>;
  /** `Date.now()` when its lease was ended. */
  expiredAt: number;
  /** The epoch of its lease: once the row's is another, its lease was taken. */
  epoch: number;
  /** Whether its run has found its lease gone (its heartbeat aborted it), as a frozen process's clock would on waking. */
  aborted(): boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `aborted()` (a run's heartbeat beats every third of its lease), at most a lease after `since`. */
export async function untilAborted(aborted: () => boolean, since: number): Promise<void> {
  while (!aborted() && Date.now() < since + SETTINGS.leaseMs) await sleep(5);
}

/** The columns that say what a batch is (not who holds it, nor when it was touched). */
const SEMANTIC = [
  'state',
  'classId',
  'className',
  'nextClassName',
  'revision',
  'appliedRevision',
  'appliedEvent',
  'createSentAt',
  'cancelledAt',
  'archivedAt',
  'joinLink',
] as const satisfies readonly (keyof BatchRow)[];

/**
 * Wakes each zombie alone. One whose lease was taken meanwhile must write nothing but a claim of the
 * class it made. (One whose lease merely ran out may still release it, storing a step it did
 * finish: the release is fenced by the epoch alone.)
 */
export async function wakeZombies(real: RealSystem): Promise<void> {
  for (const zombie of real.zombies.splice(0)) {
    await untilAborted(zombie.aborted, zombie.expiredAt);
    const before = await real.row();
    const taken = before.leaseEpoch !== zombie.epoch;
    real.count(taken ? 'zombie woken, its lease taken' : 'zombie woken, its lease expired');
    zombie.resume();
    await zombie.run;
    const after = await real.row();
    real.noteClasses();
    const claimed = before.classId === null && after.classId !== null && real.everClassIds.has(after.classId) && after.state === 'created';
    const changed = SEMANTIC.filter((column) => JSON.stringify(before[column]) !== JSON.stringify(after[column]));
    if (claimed) real.count('zombie claimed the class it made');
    else if (taken && changed.length > 0) {
      const diff = changed.map((c) => `${c}: ${JSON.stringify(before[c])} → ${JSON.stringify(after[c])}`).join(', ');
      real.violation('zombie-wrote', `${zombie.workerId}, woken after its lease was taken, wrote ${diff}`);
    }
  }
}

// Invariant 7 (liveness): from every reachable state, a fault-free path (runs with ok outcomes,
// the sweep, an operator's retry) reaches rest as the integrator asked (invariants.ts `goal`). For
// each state, a breadth-first search over fault-free steps; what it learns is kept: a state on a
// path to the goal is good, and every state of a search that found none is bad (its whole fault-free
// future was searched), so later searches stop at either.
import { goal, successors } from './batch-model.ts';
import { keyOf } from './key.ts';
import type { Model, Options } from './types.ts';

/** A fault-free future larger than this is a model error (it should be small and finite). */
const MAX_FUTURE = 200_000;

export class Liveness {
  private readonly known = new Map<string, boolean>();
  visited = 0;
  private readonly opts: Options;

  constructor(opts: Options) {
    this.opts = { ...opts, faultFree: true };
  }

  /** Null when a fault-free path from `m` reaches the goal; else why not. */
  check(m: Model): string | null {
    const first = keyOf(m, false);
    const known = this.known.get(first);
    if (known !== undefined) return known ? null : 'no fault-free path reaches rest as asked (known)';
    const parents = new Map<string, string | null>([[first, null]]);
    const queue: Model[] = [m];
    for (let at = 0; at < queue.length; at += 1) {
      const state = queue[at]!;
      const key = keyOf(state, false);
      if (goal(state, this.opts) || this.known.get(key) === true) return this.markGood(key, parents);
      for (const step of successors(state, this.opts)) {
        const next = keyOf(step.next, false);
        if (parents.has(next) || this.known.get(next) === false) continue;
        parents.set(next, key);
        queue.push(step.next);
      }
      if (queue.length > MAX_FUTURE) throw new Error(`fault-free future of a state exceeds ${MAX_FUTURE} states`);
    }
    this.visited += parents.size;
    for (const key of parents.keys()) this.known.set(key, false);
    return `no fault-free path reaches rest as asked: ${parents.size} states searched, none at rest as asked`;
  }

  private markGood(found: string, parents: Map<string, string | null>): null {
    this.visited += parents.size;
    for (let key: string | null = found; key !== null; key = parents.get(key) ?? null) this.known.set(key, true);
    return null;
  }
}

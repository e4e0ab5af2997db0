// Breadth-first search of the batch model (test/model/batch-model.ts): every state reachable within
// `depth` steps, deduplicated by a canonical key, every invariant checked after every step; then
// liveness (invariant 7): from every state found, a fault-free path reaches rest as the integrator
// asked (liveness.ts). The first violation comes back with the shortest path of steps to it.
import { type Broken, DEFAULT_BUDGET, INVARIANTS, type InvariantName, brokenBySteps, brokenByState, initial, successors } from './batch-model.ts';
import { keyOf } from './key.ts';
import { Liveness } from './liveness.ts';
import type { Budget, Bug, Model, Options } from './types.ts';

export interface ExploreOptions {
  readonly depth: number;
  readonly bug?: Bug;
  readonly budget?: Budget;
  /** The invariants to check (all by default); a bug's test may look past an earlier one. */
  readonly invariants?: readonly InvariantName[];
}

export interface Violation extends Broken {
  /** The steps from batch.created to the violation (for liveness, to the state no fault-free path leads on from). */
  readonly path: readonly string[];
  readonly state: Model;
}

export interface ExploreResult {
  /** Distinct states found (the initial one included). */
  readonly states: number;
  readonly transitions: number;
  /** The deepest level that found a new state (≤ the depth asked for). */
  readonly depth: number;
  /** The search ran out of new states before the depth asked for: every reachable state was seen. */
  readonly complete: boolean;
  readonly violation: Violation | null;
  /** States the fault-free liveness search visited beyond those found. */
  readonly livenessStates: number;
  readonly ms: number;
}

class Graph {
  readonly ids = new Map<string, number>();
  readonly parents: number[] = [];
  readonly ops: string[] = [];
  readonly models: Model[] = [];

  add(key: string, model: Model, parent: number, op: string): number | undefined {
    if (this.ids.has(key)) return undefined;
    const id = this.models.length;
    this.ids.set(key, id);
    this.parents.push(parent);
    this.ops.push(op);
    this.models.push(model);
    return id;
  }

  path(id: number, last?: string): string[] {
    const steps: string[] = last ? [last] : [];
    for (let at = id; at > 0; at = this.parents[at]!) steps.push(this.ops[at]!);
    return steps.reverse();
  }
}

export function explore(o: ExploreOptions): ExploreResult {
  const began = performance.now();
  const opts: Options = { bug: o.bug };
  const checked = new Set<InvariantName>(o.invariants ?? INVARIANTS);
  const pick = (broken: Broken[]) => broken.find((b) => checked.has(b.invariant));
  const graph = new Graph();
  const start = initial(o.budget ?? DEFAULT_BUDGET);
  graph.add(keyOf(start), start, -1, 'batch.created');
  let frontier = [0];
  let depth = 0;
  let transitions = 0;
  const done = (violation: Violation | null, livenessStates = 0): ExploreResult => ({
    states: graph.models.length,
    transitions,
    depth,
    complete: frontier.length === 0,
    violation,
    livenessStates,
    ms: Math.round(performance.now() - began),
  });
  while (frontier.length > 0 && depth < o.depth) {
    const next: number[] = [];
    for (const id of frontier) {
      const model = graph.models[id]!;
      for (const step of successors(model, opts)) {
        transitions += 1;
        const broken = pick([...brokenBySteps(step.happened), ...brokenByState(step.next, opts)]);
        if (broken) return done({ ...broken, path: graph.path(id, step.op), state: step.next });
        const added = graph.add(keyOf(step.next), step.next, id, step.op);
        if (added !== undefined) next.push(added);
      }
    }
    if (next.length > 0) depth += 1;
    frontier = next;
  }
  if (!checked.has('liveness')) return done(null);
  const liveness = new Liveness(opts);
  for (let id = 0; id < graph.models.length; id += 1) {
    const stuck = liveness.check(graph.models[id]!);
    if (stuck) return done({ invariant: 'liveness', message: stuck, path: graph.path(id), state: graph.models[id]! }, liveness.visited);
  }
  return done(null, liveness.visited);
}

// The fault suite's heal phase: no more faults; an operator retries every `failed` and `needs_review`
// batch (a few times at most: a batch whose class the suite deleted fails again, and one whose
// listing stays ambiguous is held again, as they should) and takes back every abandon except those
// left on purpose, until every batch is at rest.
import { batchClasses } from '../../src/db/schema/index.ts';
import { TERMINAL_STATES, changeDue } from '../../src/mapping/index.ts';
import type { BatchKey } from '../../src/sync/keys.ts';
import { trace } from './changes.ts';
import { type OperatorDeps, operate } from './operators.ts';

type Row = typeof batchClasses.$inferSelect;

export interface HealFigures {
  /** Operator actions of the heal phase, by outcome (as OperatorFigures.actions). */
  actions: Record<string, number>;
  /** Batches still held (failed or needs_review) once their retries were used. */
  heldAfterRetries: string[];
  /** Actions that threw and were made again. */
  errors: number;
  ms: number;
}

export interface HealInput {
  deps: OperatorDeps;
  n: number;
  keyOf: (row: Row) => BatchKey;
  /** Batches to leave abandoned. */
  leave: ReadonlySet<string>;
  /** Whether a cancelled batch's class is still listed, unarchived (then it is not at rest). */
  visibleClass: (row: Row) => boolean;
  deadline: number;
  /** Called on every pass (keeps the fleet at strength). */
  meanwhile: () => void;
}

/** Retries per batch in the heal phase. */
const MAX_RETRIES = 3;

/**
 * Nothing left for a run to do: a terminal state with no change due, and a cancelled batch's class
 * (if the remote still holds it) archived.
 */
export function atRest(row: Row, visibleClass: (row: Row) => boolean): boolean {
  if (!TERMINAL_STATES.includes(row.state) || changeDue(row)) return false;
  return !(row.state === 'cancelled' && row.classId !== null && row.archivedAt === null && visibleClass(row));
}

export async function heal(input: HealInput): Promise<HealFigures> {
  const started = Date.now();
  const figures: HealFigures = { actions: {}, heldAfterRetries: [], errors: 0, ms: 0 };
  const retries = new Map<string, number>();
  for (;;) {
    input.meanwhile();
    const rows = await input.deps.db
      .select()
      .from(batchClasses)
      .catch(() => undefined);
    if (rows) {
      const actions = dueActions(rows, input, retries);
      if (actions.length === 0 && rows.length === input.n && rows.every((r) => atRest(r, input.visibleClass))) {
        figures.heldAfterRetries = rows.filter((r) => r.state === 'failed' || r.state === 'needs_review').map((r) => `${r.batchId} (${r.state})`);
        break;
      }
      for (const [kind, row] of actions) await act(input, figures, retries, kind, row);
    }
    if (Date.now() > input.deadline) break;
    await sleep(250);
  }
  figures.ms = Date.now() - started;
  trace(`healed in ${figures.ms} ms: ${JSON.stringify(figures.actions)}`);
  return figures;
}

/** What an operator does now: undo an abandon not left on purpose; retry a held batch no run holds, while retries last. */
function dueActions(rows: readonly Row[], input: HealInput, retries: Map<string, number>): ['undo' | 'retry', Row][] {
  const now = Date.now();
  const actions: ['undo' | 'retry', Row][] = [];
  for (const row of rows) {
    if (row.state === 'abandoned' && !input.leave.has(row.batchId)) actions.push(['undo', row]);
    const held = row.state === 'failed' || row.state === 'needs_review';
    const leased = row.leaseExpiresAt !== null && row.leaseExpiresAt.getTime() > now;
    // A class the remote no longer knows stays unknown: one retry shows it.
    const limit = row.lastErrorKind === 'class_unknown' ? 1 : MAX_RETRIES;
    if (held && !leased && (retries.get(row.batchId) ?? 0) < limit) actions.push(['retry', row]);
  }
  return actions;
}

async function act(input: HealInput, figures: HealFigures, retries: Map<string, number>, kind: 'undo' | 'retry', row: Row): Promise<void> {
  try {
    const outcome = await operate(input.deps, kind, input.keyOf(row));
    figures.actions[`${kind}:${outcome}`] = (figures.actions[`${kind}:${outcome}`] ?? 0) + 1;
    if (kind === 'retry') retries.set(row.batchId, (retries.get(row.batchId) ?? 0) + 1);
  } catch {
    figures.errors += 1;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

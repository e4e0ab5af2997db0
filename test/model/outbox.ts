// The outbox trigger of the model (the design: Webhooks): a message when the state enters one the
// integrator is told about, or an abandon is undone; batch.updated when a synced batch's APPLIED
// values change. It compares the row before and after each step, as the SQL trigger does.
import type { Message, MessageType, Model, Options, Row } from './types.ts';

const ANNOUNCED: ReadonlySet<string> = new Set(['synced', 'failed', 'needs_review', 'abandoned', 'cancelled']);

function message(type: MessageType, row: Row): Message {
  const carries = type === 'synced' || type === 'updated';
  return { type, name: carries ? row.className : null, subject: carries ? (row.applied?.subject ?? null) : null };
}

/** The outbox's newest message after a step from `before` to `after.row` (`undone`: the step was an undo). */
export function triggered(before: Row, after: Model, undone: boolean, opts: Options): Message | null {
  const row = after.row;
  if (row.state !== before.state && ANNOUNCED.has(row.state)) return message(row.state as MessageType, row);
  if (undone) return message('restored', row);
  if (before.state !== 'synced' || row.state !== 'synced') return after.last;
  if (opts.bug === 'updatedTellsEvent') {
    // The historic defect: the newest values, not the applied ones.
    const changed = row.event.name !== before.event.name || row.event.subject !== before.event.subject;
    return changed ? { type: 'updated', name: row.event.name, subject: row.event.subject } : after.last;
  }
  const changed = row.className !== before.className || row.applied?.subject !== before.applied?.subject || row.applied?.name !== before.applied?.name;
  return changed ? message('updated', row) : after.last;
}

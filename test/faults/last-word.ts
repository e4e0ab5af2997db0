// The fault suite's check of the webhooks' last word (invariant 6): for each batch at rest, the newest
// message of the outbox (by id) tells the state the batch rests in.
//
// What "at rest" means, per state, and the message that must be newest:
// - synced (no change due): batch.synced, or batch.updated once an edit reached its class;
// - cancelled (no change due; its class archived or gone): batch.cancelled;
// - failed, needs_review: batch.failed, batch.needs_review; or batch.abandon_undone naming that state
//   (an undone abandon that leads back to it tells it so);
// - abandoned: batch.abandoned.
// A batch is only ever written a message on entering one of those states (or leaving `abandoned`),
// so a batch that never left `pending`, `creating`, `created` or `link_enabled` has none; one at rest
// with none at all is reported as missing.
import { TERMINAL_STATES } from '../../src/mapping/index.ts';
import type { createRuntime } from '../../src/runtime/runtime.ts';

type Runtime = ReturnType<typeof createRuntime>;

export interface LastWordReport {
  /** Batches at rest whose newest message was checked. */
  checked: number;
  /** `batch (state): newest message type (data.state)` for each that disagrees. */
  wrong: string[];
  /** Batches at rest in a state that is told, with no message at all. */
  missing: string[];
  /** Batches not at rest that have a message claiming a state they are not in (for the record; not a failure). */
  notAtRestTold: number;
}

interface Newest {
  batchId: string;
  state: string;
  type: string | null;
  told: string | null;
}

/** The types that may be the newest message of a batch resting in each state. */
const TELLS: Record<string, readonly string[]> = {
  synced: ['batch.synced', 'batch.updated'],
  cancelled: ['batch.cancelled'],
  failed: ['batch.failed', 'batch.abandon_undone'],
  needs_review: ['batch.needs_review', 'batch.abandon_undone'],
  abandoned: ['batch.abandoned'],
};

/** `atRest`: which batch ids are at rest (see heal.ts). */
export async function lastWord(runtime: Runtime, atRest: ReadonlySet<string>): Promise<LastWordReport> {
  const result = await runtime.database.pool.query<Newest>(
    `select b.batch_id as "batchId", b.state::text as state, m.type, m.data->>'state' as told
       from batch_classes b
       left join lateral (select type, data from webhook_messages w where w.batch_row_id = b.id order by w.id desc limit 1) m on true
      order by b.id`,
  );
  const report: LastWordReport = { checked: 0, wrong: [], missing: [], notAtRestTold: 0 };
  for (const row of result.rows) {
    if (!atRest.has(row.batchId) || !(TERMINAL_STATES as readonly string[]).includes(row.state)) {
      if (row.told !== null && row.told !== row.state) report.notAtRestTold += 1;
      continue;
    }
    report.checked += 1;
    if (row.type === null) {
      report.missing.push(`${row.batchId} (${row.state}): no message`);
      continue;
    }
    if (row.told !== row.state || !TELLS[row.state]?.includes(row.type)) {
      report.wrong.push(`${row.batchId} (${row.state}): newest message ${row.type} (state ${row.told})`);
    }
  }
  return report;
}

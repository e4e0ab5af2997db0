// The design's invariants, checked against the real system after every command: the batch's row,
// the sandbox's ground truth, and the webhook messages the outbox trigger wrote (with what the row
// held when each was written: mbt_message_facts, filled by a test-only trigger, see installObserver).
import type pg from 'pg';
import type { BatchRow } from '../../src/db/schema/index.ts';
import { renderClassName } from '../../src/sync/names.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import type { Model, RealSystem } from './real-system.ts';
import { type Message, type Observed, readObserved } from './reads.ts';
import { atRest, stateFactsProblem } from './rules.ts';

/** The state each last word may announce (an undo announces itself, whatever state it leads to: see the report). */
const LAST_WORD: Record<string, readonly string[]> = {
  synced: ['batch.synced', 'batch.updated'],
  failed: ['batch.failed'],
  needs_review: ['batch.needs_review'],
  abandoned: ['batch.abandoned'],
  cancelled: ['batch.cancelled'],
};

/** The class name the newest accepted values render to. */
export function expectedName(real: RealSystem, model: Model): string {
  const template = publishDepsOf(real.h).defaults.classNameTemplate;
  return renderClassName(template, { name: model.name, batchId: real.key.batchId, subject: model.subject });
}

/**
 * Every invariant of the design that can be read from outside; throws naming each one broken. `seen`:
 * the view just read after the command's last change, if its path read it (else it is read now).
 */
export async function checkInvariants(real: RealSystem, model: Model, after: string, seen?: Observed): Promise<BatchRow> {
  const { row, messages, refused } = seen ?? (await readObserved(real.db, real.key));
  real.noteClasses();
  if (real.everClassIds.size > 1)
    real.violation('inv1-two-classes', `the batch has had ${real.everClassIds.size} classes: ${[...real.everClassIds].join(', ')}`);
  if (row.classId !== null && !real.everClassIds.has(row.classId))
    real.violation('inv1-unknown-class-id', `stored ClassID ${row.classId} was never a class of the sandbox`);
  real.count(`state ${row.state}${row.createSentAt !== null && row.classId === null ? ' in doubt' : ''}`);
  const facts = stateFactsProblem(row);
  if (facts) real.violation(`inv8-${row.state}`, facts);
  for (const m of messages) {
    if (m.type !== 'batch.updated') continue;
    if (m.data.className !== m.className || m.data.subject !== m.appliedSubject) {
      const applied = JSON.stringify({ className: m.className, subject: m.appliedSubject });
      real.violation('webhook-updated-payload', `batch.updated announced ${JSON.stringify(m.data)} while the class had been given ${applied}`);
    }
  }
  if (atRest(row)) atRestProblems(real, model, row, messages, refused);
  const miscounted = await countsProblem(real.pool);
  if (miscounted) real.violation('inv-counts', miscounted);
  const found = real.takeViolations();
  if (found.length > 0) {
    const lines = found.map((v) => `  [${v.kind}] ${v.message}`).join('\n');
    const trail = process.env.MODEL_TRACE ? `\n  audit trail:\n${await trailOf(real)}` : '';
    throw new Error(`after ${after}: ${found.length} violation(s) of the design\n${lines}\n  row: ${describe(row)}${trail}`);
  }
  return row;
}

/**
 * The counts `status` and the metrics show (batch_counts, webhook_message_counts: deltas kept by
 * triggers, folded by the housekeeping) equal a count of the rows themselves, read in one snapshot.
 */
async function countsProblem(pool: pg.Pool): Promise<string | undefined> {
  const { rows } = await pool.query<{ key: string; kept: string; real: string }>(`
    with kept as (select institute_id || ' ' || state || ' ' || lane as key, sum(n) as n from batch_counts group by 1
                  union all select 'message ' || status, sum(n) from webhook_message_counts group by 1),
         counted as (select institute_id || ' ' || state || ' ' || lane as key, count(*) as n from batch_classes group by 1
                     union all select 'message ' || status, count(*) from webhook_messages group by 1)
    select key, coalesce(k.n, 0) as kept, coalesce(c.n, 0) as real from kept k full join counted c using (key)
     where coalesce(k.n, 0) <> coalesce(c.n, 0)`);
  return rows.length === 0 ? undefined : `kept counts differ from the rows: ${rows.map((r) => `${r.key} kept ${r.kept}, rows ${r.real}`).join('; ')}`;
}

/** The batch's audit trail (MODEL_TRACE=1), oldest first: who moved it where, and which calls they made. */
async function trailOf(real: RealSystem): Promise<string> {
  const { rows } = await real.pool.query<Record<string, unknown>>(
    `select e.type, e.from_state, e.to_state, e.operation, e.outcome, e.worker_id, e.detail from batch_events e
       join batch_classes b on b.id = e.batch_row_id where b.batch_id = $1 order by e.id`,
    [real.key.batchId],
  );
  return rows
    .map(
      (e) =>
        `    ${Object.values(e)
          .filter((v) => v !== null)
          .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
          .join(' ')}`,
    )
    .join('\n');
}

/** Invariants 4, 5 and 6: what a batch at rest must show. */
function atRestProblems(real: RealSystem, model: Model, row: BatchRow, messages: Message[], refused: ReadonlySet<number>): void {
  const classes = real.ownClasses();
  if (row.state === 'cancelled') {
    const visible = classes.filter((c) => !c.archived);
    if (visible.length > 0) real.violation('inv4-cancelled-visible', `cancelled at rest, but class ${visible.map((c) => c._id)} is visible (not archived)`);
  }
  const own = classes.find((c) => c._id === row.classId);
  // A change the remote refused is excused while it is the newest: its history line is the durable record.
  if (row.state === 'synced' && own && !refused.has(row.revision)) {
    const name = expectedName(real, model);
    if (own.sentName !== name || own.subject !== model.subject) {
      const has = JSON.stringify({ name: own.sentName, subject: own.subject });
      real.violation('inv5-synced-stale', `synced at rest, but the class carries ${has}, not the newest ${JSON.stringify({ name, subject: model.subject })}`);
    }
  }
  const last = messages.at(-1);
  const allowed = [...(LAST_WORD[row.state] ?? []), 'batch.abandon_undone'];
  if (!last || last.data.state !== row.state || !allowed.includes(last.type)) {
    const said = last ? `${last.type} (state ${last.data.state})` : 'nothing';
    real.violation('inv6-last-word', `at rest in ${row.state}, but the last webhook message is ${said}`);
  }
}

/** The facts of a row, for a counterexample. */
export function describe(row: BatchRow): string {
  const { state, classId, className, nextClassName, revision, appliedRevision, cancelledAt, archivedAt, lastErrorKind, leaseOwner } = row;
  const sent = row.createSentAt !== null;
  const subject = row.event.subject;
  const applied = row.appliedEvent?.subject;
  const shown = { state, classId, sent, className, nextClassName, subject, applied, revision, appliedRevision, cancelled: cancelledAt !== null };
  return JSON.stringify({ ...shown, archived: archivedAt !== null, lastErrorKind, leaseOwner, leaseExpiresAt: row.leaseExpiresAt });
}

/**
 * A test-only trigger (no product code reads it): for each webhook message, what its batch's row
 * held when the message was written (the outbox trigger runs in the statement that changed the row,
 * so the row read here is the changed one). Lets `batch.updated` be checked against the applied values.
 */
export async function installObserver(pool: pg.Pool): Promise<void> {
  await pool.query(`
    create table if not exists mbt_message_facts (message_id text primary key, class_name text, applied_subject text, state text);
    create or replace function mbt_observe_message() returns trigger language plpgsql as $$
    begin
      insert into mbt_message_facts (message_id, class_name, applied_subject, state)
      select NEW.message_id, b.class_name, coalesce(b.applied_event, b.event) ->> 'subject', b.state::text from batch_classes b where b.id = NEW.batch_row_id;
      return null;
    end $$;
    drop trigger if exists mbt_observe_message on webhook_messages;
    create trigger mbt_observe_message after insert on webhook_messages for each row execute function mbt_observe_message();`);
}

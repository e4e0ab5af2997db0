// The fault suite's own audits, shown to catch what they look for: the lease audit
// (test/faults/lease-audit.ts) names a call that arrives while its batch holds no live lease (never
// taken, or run out) and passes one made inside a lease; the last-word check (test/faults/last-word.ts)
// names a batch whose newest webhook tells another state than the one it rests in.
import { sql } from 'drizzle-orm';
import { expect, it } from 'vitest';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { acquireLease } from '../../src/mapping/index.ts';
import { lastWord } from '../faults/last-word.ts';
import { LeaseAuditor } from '../faults/lease-audit.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h } = useHarness();

/** The lease audit listening, `batchIds` published, and an add-class naming a batch (as the fault suite's do). */
async function auditing(batchIds: readonly string[]) {
  await LeaseAuditor.install(h.config.databaseUrl);
  const auditor = new LeaseAuditor(h.sandbox);
  auditor.start();
  const client = h.runtime.remotes.default.classroom;
  const instituteId = h.config.classroom.instituteId;
  for (const batchId of batchIds) await publishBatchCreated(publishDepsOf(h), { batchId, name: `Audit ${batchId}`, subject: 'Maths' });
  const send = (batchId: string) => client.addClass({ name: `Audit ${batchId}`, subject: 'Maths', instituteId, extra: { chaosRef: batchId } });
  return { auditor, client, instituteId, send };
}

it('the lease audit names calls made without a live lease, and only those', async () => {
  const { auditor, client, instituteId, send } = await auditing(['none', 'live', 'expired']);
  const { classId: unleased } = await send('none');
  await acquireLease(h.runtime.database.db, { instituteId, batchId: 'live' }, 'audit', 3_000, 1, 1_000);
  const { classId: leased } = await send('live');
  await h.runtime.remotes.default.classroom.getClass(leased);
  await acquireLease(h.runtime.database.db, { instituteId, batchId: 'expired' }, 'audit', 100, 1, 1_000);
  await waitFor(async () => {
    const { rows } = await h.runtime.database.pool.query("select lease_expires_at < now() as over from batch_classes where batch_id = 'expired'");
    return rows[0]?.over === true;
  }, 'the 100 ms lease to run out');
  await send('expired');
  // A call about a class the suite deleted is still told apart: its batch was remembered.
  auditor.remember(unleased, 'none');
  h.sandbox.store.delete(unleased);
  await client.getClass(unleased).catch(() => undefined);
  auditor.stop();
  const report = await auditor.report(h.runtime.database.pool);
  expect(report.checked).toEqual({ addClass: 3, getClass: 2 });
  expect(report.unattributed).toBe(0);
  const seen = report.violations.map((v) => ({ batchId: v.batchId, operation: v.operation, lease: v.lease }));
  expect(seen).toEqual([
    { batchId: 'none', operation: 'addClass', lease: 'released' },
    { batchId: 'expired', operation: 'addClass', lease: 'expired' },
    { batchId: 'none', operation: 'getClass', lease: 'released' },
  ]);
  expect(report.violations[1]!.marginMs, 'the expired lease had ended before the call').toBeLessThan(0);
});

it('the lease audit tells a call sent under a lease and read after it (in flight, given up on) from one sent without a lease', async () => {
  const { auditor, instituteId, send } = await auditing(['in-flight', 'never-leased']);
  const { pool } = h.runtime.database;
  // What a run's write stores of an add-class its client gave up on: sent 1 ms before it was recorded.
  const givenUp = (batchId: string) =>
    pool.query(
      `insert into batch_events (batch_row_id, at, type, operation, duration_ms, outcome)
       select id, clock_timestamp(), 'remote_call', 'addClass', 1, 'outcome_unknown' from batch_classes where batch_id = $1`,
      [batchId],
    );
  await acquireLease(h.runtime.database.db, { instituteId, batchId: 'in-flight' }, 'audit', 3_000, 1, 1_000);
  await givenUp('in-flight');
  await pool.query("update batch_classes set lease_expires_at = null where batch_id = 'in-flight'");
  await givenUp('never-leased');
  // Each given-up call read only now, after its lease was let go; the second 'in-flight' call has no sending of its own.
  await send('in-flight');
  await send('in-flight');
  await send('never-leased');
  auditor.stop();
  const report = await auditor.report(pool);
  const named = (list: typeof report.violations) => list.map((v) => `${v.batchId} ${v.operation} ${v.lease}`);
  expect(named(report.lateArrivals)).toEqual(['in-flight addClass released']);
  expect(named(report.violations)).toEqual(['in-flight addClass released', 'never-leased addClass released']);
});

it('the last-word check names a batch whose newest message tells another state than the one it rests in', async () => {
  await publishBatchCreated(publishDepsOf(h), { batchId: 'word', name: 'Word', subject: 'Maths' });
  // Failed by hand (the trigger writes batch.failed), then moved to synced behind the trigger's back.
  await h.runtime.database.db.execute(sql`update batch_classes set state = 'failed' where batch_id = 'word'`);
  let report = await lastWord(h.runtime, new Set(['word']));
  expect(report).toMatchObject({ checked: 1, wrong: [], missing: [] });
  await h.runtime.database.db.execute(sql`alter table batch_classes disable trigger user`);
  await h.runtime.database.db.execute(sql`update batch_classes set state = 'synced' where batch_id = 'word'`);
  await h.runtime.database.db.execute(sql`alter table batch_classes enable trigger user`);
  report = await lastWord(h.runtime, new Set(['word']));
  expect(report.wrong).toEqual(['word (synced): newest message batch.failed (state failed)']);
});

import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { publishBatchUpdated } from '../../src/intake/publish.ts';
import { rowOf } from '../helpers/batches.ts';
import { type Harness, publishDepsOf } from '../helpers/harness.ts';
import { databaseAtMigration } from '../helpers/migrations.ts';
import { addClassCalls, runToRest } from '../helpers/runs.ts';
import { useHarness } from '../helpers/use-harness.ts';

const scope = useHarness();
const { h } = scope;
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('migration 0010 on rows the code before it left in doubt', () => {
  it('M1: leaves no batch `cancelled` or `pending` while a class of it may exist; a reopen then sends no second add-class', async () => {
    // A database at 0009, as a deployment of the previous version has it.
    const { name, url, client } = await databaseAtMigration(9, (close) => cleanups.push(close));

    // The remote made the classes of both batches (their add-class answers were lost).
    const instituteId = h.config.classroom.instituteId;
    for (const className of ['Legacy cancelled', 'Legacy reopened']) {
      await h.runtime.remotes.default.classroom.addClass({ name: className, subject: 'Logic', instituteId, extra: {} });
    }
    const event = (batchId: string, className: string) => JSON.stringify({ batchId, instituteId, name: className, subject: 'Logic', extra: {} });
    // What the code before 0010 wrote: failed in doubt (listing refused on the last attempt), then
    // batch.cancelled v2: `cancelled` at once (it took a failed batch without a class id for one
    // with nothing sent). The second was then reopened by batch.updated v3: `pending`.
    await client.query(
      `insert into batch_classes (institute_id, batch_id, class_name, state, event, applied_event, create_sent_at, create_ended_at,
                                  last_error, last_error_kind, cancelled_at, version, revision, applied_revision, attempts)
       values ($1, 'lg-cancelled', 'Legacy cancelled', 'cancelled', $2::jsonb, $2::jsonb, now() - interval '1 hour', now() - interval '1 hour',
               'the listing was refused', 'rejected', now() - interval '50 minutes', 2, 1, 1, 3),
              ($1, 'lg-reopened', 'Legacy reopened', 'pending', $3::jsonb, $3::jsonb, now() - interval '1 hour', now() - interval '1 hour',
               'the listing was refused', 'rejected', null, 3, 2, 1, 3)`,
      [instituteId, event('lg-cancelled', 'Legacy cancelled'), event('lg-reopened', 'Legacy reopened')],
    );

    // The new version starts: 0010 is applied.
    await runMigrations(url);
    const { rows } = await client.query<{ batch_id: string; state: string }>(
      `select batch_id, state::text from batch_classes where class_id is null and create_sent_at is not null order by batch_id`,
    );
    // The design's table: in doubt, a batch is creating, needs_review or abandoned; never cancelled or pending.
    expect
      .soft(
        rows.map((r) => ({ batchId: r.batch_id, allowed: ['creating', 'needs_review', 'abandoned'].includes(r.state), state: r.state })),
        'rows in doubt after 0010',
      )
      .toEqual([
        { batchId: 'lg-cancelled', allowed: true, state: expect.any(String) },
        { batchId: 'lg-reopened', allowed: true, state: expect.any(String) },
      ]);

    // What follows on this database: the runtime of the new version, the same remote.
    const config = loadConfig({ ...h.env, DATABASE_URL: url });
    const runtime = scope.runtime(config);
    const migrated: Harness = { env: h.env, config, sandbox: h.sandbox, runtime, databaseName: name, close: async () => undefined };
    const before = addClassCalls(h);
    // The integrator reopens the cancelled one; the reopened one's job runs.
    await publishBatchUpdated(publishDepsOf(runtime), { batchId: 'lg-cancelled', subject: 'Physics', version: 3 });
    for (const batchId of ['lg-cancelled', 'lg-reopened']) await runToRest(migrated, batchId).catch(() => undefined);
    expect(addClassCalls(h) - before, 'add-class requests for batches whose class already exists').toBe(0);
    for (const className of ['Legacy cancelled', 'Legacy reopened']) {
      expect(h.sandbox.state().byName[className], `classes named ${className}`).toBe(1);
    }
    void rowOf;
  });
});

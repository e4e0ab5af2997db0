// The audit trail: a batch's full timeline after a run with injected faults, secrets kept out,
// pruning by retention, and the `history` command.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { pruneEvents, readTimeline } from '../../src/mapping/index.ts';
import { batchEvents } from '../../src/db/schema/index.ts';
import { publishBatchCreated } from '../../src/intake/publish.ts';
import { untilSynced } from '../helpers/batches.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';
import { BIN } from '../helpers/cli.ts';

const run = promisify(execFile);
const { h } = useHarnessWithWorker();

describe('audit trail', () => {
  it('shows every retry and the outcome-unknown resolution, in order, with no join link', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    h.sandbox.faults.enqueue({ operation: 'editClass', fault: 'error5xx' });
    await publishBatchCreated(publishDepsOf(h), { batchId: 'hist-1', name: 'History class', subject: 'History' });
    const row = await untilSynced(h, 'hist-1');
    const timeline = (await readTimeline(h.runtime.database.db, { instituteId: row.instituteId, batchId: 'hist-1' }))!;
    const story = timeline.map((e) =>
      e.type === 'remote_call' ? `call ${e.operation} ${e.outcome}` : `${e.type} ${e.fromState ?? ''}→${e.toState ?? ''}`.trim(),
    );
    expect(story).toEqual([
      'received →pending',
      'transition pending→creating',
      'call addClass outcome_unknown',
      'call listClasses ok',
      'transition creating→created',
      'call editClass outcome_unknown',
      'call editClass ok',
      'transition created→link_enabled',
      'call getClass ok',
      'transition link_enabled→synced',
    ]);
    const adoption = timeline.find((e) => e.toState === 'created');
    expect(adoption?.detail).toEqual({ resolution: 'adopt' });
    expect(adoption?.classId).toBe(row.classId);
    const failedEdit = timeline.find((e) => e.operation === 'editClass' && e.outcome !== 'ok');
    expect(failedEdit).toMatchObject({ httpStatus: expect.any(Number), attempt: expect.any(Number) });
    expect(failedEdit?.error).toMatch(/editClass failed with HTTP 5\d\d/);
    expect(timeline.every((e) => e.at instanceof Date)).toBe(true);
    expect(timeline.filter((e) => e.type === 'remote_call').every((e) => e.workerId === h.runtime.workerId)).toBe(true);
    expect(JSON.stringify(timeline)).not.toContain(row.joinLink!);
  });

  it('records a needs_review with the candidates it saw', async () => {
    h.sandbox.store.create({ name: 'Ambiguous', subject: 'History', instituteId: h.config.classroom.instituteId });
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    await publishBatchCreated(publishDepsOf(h), { batchId: 'hist-2', name: 'Ambiguous', subject: 'History' });
    const timeline = await waitFor(async () => {
      const t = await readTimeline(h.runtime.database.db, { instituteId: h.config.classroom.instituteId, batchId: 'hist-2' });
      return t?.some((e) => e.toState === 'needs_review') ? t : undefined;
    }, 'needs_review recorded');
    const last = timeline.at(-1)!;
    expect(last).toMatchObject({ type: 'transition', fromState: 'creating', toState: 'needs_review' });
    expect(last.error).toMatch(/2 unmapped remote classes/);
    expect((last.detail as { matches: string[] }).matches).toHaveLength(2);
  });

  it('prunes events older than the retention and keeps the rest', async () => {
    const db = h.runtime.database.db;
    const [{ total }] = (await db.execute<{ total: number }>(sql`select count(*)::int as total from batch_events`)).rows as [{ total: number }];
    await db.update(batchEvents).set({ at: sql`now() - interval '40 days'` }).where(eq(batchEvents.type, 'received'));
    const [{ old }] = (await db.execute<{ old: number }>(sql`select count(*)::int as old from batch_events where type = 'received'`)).rows as [{ old: number }];
    expect(old).toBeGreaterThan(0);
    expect(await pruneEvents(db, 30 * 86_400_000, 1)).toBe(old);
    const [{ left }] = (await db.execute<{ left: number }>(sql`select count(*)::int as left from batch_events`)).rows as [{ left: number }];
    expect(left).toBe(total - old);
    expect(await pruneEvents(db, 30 * 86_400_000)).toBe(0);
  });

  it('`classroom-sync history` prints the timeline, and fails for an unknown batch', async () => {
    const env = { ...process.env, ...h.env };
    const { stdout } = await run(process.execPath, [BIN, 'history', 'hist-1'], { env });
    expect(stdout).toMatch(/transition pending → creating/);
    expect(stdout).toMatch(/addClass → outcome_unknown/);
    expect(stdout).toMatch(/transition link_enabled → synced class [0-9a-f]{24}/);
    const json = JSON.parse((await run(process.execPath, [BIN, 'history', 'hist-1', '--json'], { env })).stdout) as unknown[];
    expect(json.length).toBeGreaterThanOrEqual(9);
    await expect(run(process.execPath, [BIN, 'history', 'nope'], { env })).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/not known/) });
  });
});

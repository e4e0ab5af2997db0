// `classroom-sync reconcile [--dry-run] [--json]` as a user runs it: a child process, real database,
// real Redis, the sandbox over HTTP.
import { execFile } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { batchClasses } from '../../src/db/schema/index.ts';
import type { ReconcileReport } from '../../src/reconcile/types.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { rowsOf } from '../helpers/batches.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BIN } from '../helpers/cli.ts';

const { h } = useHarness({ env: { SYNC_STUCK_AFTER: '1m' } });

beforeAll(async () => {
  const inst = h.config.classroom.instituteId;
  // Three synced mappings made directly: one in sync, one whose class was deleted, one stuck.
  const rows = ['Cli A', 'Cli B', 'Cli C'].map((name, i) => {
    const cls = h.sandbox.store.setJoinLink(h.sandbox.store.create({ name, subject: 'Art', instituteId: inst })._id, true)!;
    return {
      instituteId: inst,
      batchId: `cli-${i}`,
      className: name,
      classId: cls._id,
      joinLink: cls.joinMagicLink,
      state: 'synced' as const,
      event: { batchId: `cli-${i}`, name, subject: 'Art', instituteId: inst, extra: {} },
    };
  });
  await h.runtime.database.db.insert(batchClasses).values(rows);
  h.sandbox.store.delete(rows[1]!.classId);
  await h.runtime.database.pool.query(`update batch_classes set state = 'created', updated_at = now() - interval '1 hour' where batch_id = 'cli-2'`);
  h.sandbox.store.create({ name: 'Nobody', subject: 'Art', instituteId: inst });
});

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', ...h.env, ...env }, timeout: 45_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const snapshot = async () => JSON.stringify(await rowsOf(h));

describe('classroom-sync reconcile', () => {
  it('--dry-run --json prints the report and changes nothing', async () => {
    const before = await snapshot();
    const jobsBefore = await h.runtime.queue.getJobCounts();
    const { code, stdout, stderr } = await cli(['reconcile', '--dry-run', '--json'], { LOG_LEVEL: 'info' });
    expect(code).toBe(0);
    // Logs (here at info) go to stderr; stdout is exactly one JSON document.
    expect(stderr).toMatch(/reconciliation found drift/);
    const report = JSON.parse(stdout) as ReconcileReport;
    expect(report).toMatchObject({ dryRun: true, ok: true, trigger: 'cli' });
    expect(report.counts).toMatchObject({ in_sync: 1, missing_remote: 1, stuck: 1, orphan_remote: 1 });
    expect(report.findings.missing_remote).toMatchObject([{ batchId: 'cli-1' }]);
    expect(await snapshot()).toBe(before);
    expect(await h.runtime.queue.getJobCounts()).toEqual(jobsBefore);
  });

  it('without flags prints a table, repairs the stuck batch and reports the rest', async () => {
    const { code, stdout } = await cli(['reconcile']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^stuck\s+1\s+requeue$/m);
    expect(stdout).toMatch(/^missing_remote\s+1\s+report$/m);
    expect(stdout).toMatch(/batch cli-1 → class \w+ "Cli B"/);
    expect(stdout).toMatch(/repairs: 1 re-enqueued/);
    // Queued again (jobs wait in priority order: BullMQ calls that state `prioritized`).
    expect(await h.runtime.queue.getJobState(jobIdFor({ instituteId: h.config.classroom.instituteId, batchId: 'cli-2' }))).toBe('prioritized');
  });

  it('rejects a bad flag value with a message and a non-zero exit code', async () => {
    const { code, stderr } = await cli(['reconcile', '--link-checks', 'lots']);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/--link-checks.*whole number/);
  });
});

// The batch commands as a user runs them: enqueue (NDJSON from stdin and from a file), status, retry.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { rowOf, untilAllSynced, untilSynced } from '../helpers/batches.ts';
import { waitFor } from '../helpers/harness.ts';
import { killAllChildren, runCli } from '../helpers/cli.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';

const { h, defer } = useHarnessWithWorker();
defer(killAllChildren);

/** Under the default institute, as the commands look batches up without --institute. */
const batch = (batchId: string) => rowOf(h, batchId, h.config.classroom.instituteId);

describe('classroom-sync enqueue / status / retry', () => {
  it('enqueue reads NDJSON from stdin, reports each bad line with its number and reason, exits 1', async () => {
    const stdin = [
      JSON.stringify({ batchId: 'cli-1', name: 'CLI one', subject: 'Maths' }),
      '{"batchId": "cli-2", "name": "broken"',
      '',
      JSON.stringify({ batchId: 'cli-3', subject: 'Maths' }),
      JSON.stringify({ batchId: 'cli-4', name: 'CLI four', subject: 'Maths' }),
    ].join('\n');
    const result = await runCli(['enqueue'], { env: h.env, stdin });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^line 2: \(line\) is not valid JSON/m);
    expect(result.stderr).toMatch(/^line 4: name is required$/m);
    expect(result.stdout).toMatch(/accepted 2 \(0 already known\), rejected 2/);
    await untilAllSynced(h, ['cli-1', 'cli-4']);
    expect(await batch('cli-3')).toBeUndefined();
  });

  it('enqueue takes updates and cancellations in order (a stale one counted); status and history show the change and the cancel', async () => {
    const stdin = [
      JSON.stringify({ batchId: 'cli-ch', name: 'CLI change', subject: 'Maths', version: 1 }),
      JSON.stringify({ type: 'batch.updated', batchId: 'cli-ch', name: 'CLI changed', version: 2 }),
      JSON.stringify({ type: 'batch.updated', batchId: 'cli-ch', name: 'CLI older', version: 1 }),
      JSON.stringify({ type: 'batch.updated', batchId: 'cli-none', name: 'Nobody' }),
    ].join('\n');
    const result = await runCli(['enqueue'], { env: h.env, stdin });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^line 4: batchId is not recorded under institute .*batch\.created first$/m);
    expect(result.stdout).toMatch(/accepted 3 \(0 already known, 1 stale \(version not above the last applied: ignored\)\), rejected 1/);
    // Synced, and the rename applied: it may land after the add-class, and reach the class by edit-class.
    await untilSynced(h, 'cli-ch');
    await waitFor(async () => (await batch('cli-ch'))?.className === 'CLI changed' || undefined, 'the rename applied');
    const cancel = await runCli(['enqueue'], { env: h.env, stdin: JSON.stringify({ type: 'batch.cancelled', batchId: 'cli-ch', version: 3 }) });
    expect(cancel.code).toBe(0);
    await waitFor(async () => (await batch('cli-ch'))?.state === 'cancelled' || undefined, 'cancelled');
    const [status, history] = await Promise.all([runCli(['status', 'cli-ch'], { env: h.env }), runCli(['history', 'cli-ch'], { env: h.env })]);
    expect(status.stdout).toMatch(/^state\s+cancelled$/m);
    expect(status.stdout).toMatch(/^version\s+3$/m);
    expect(status.stdout).toMatch(/^cancelled\s+\S+; class archived$/m);
    expect(history.stdout).toMatch(/\bupdated\b.*"version":2/);
    expect(history.stdout).toMatch(/\bstale\b.*"lastVersion":2/);
    expect(history.stdout).toMatch(/transition \w+ → cancelled/);
  });

  it('enqueue from a file exits 0 when every line is valid, and re-enqueueing is harmless', async () => {
    const file = join(tmpdir(), `cs-enqueue-${process.pid}.ndjson`);
    writeFileSync(file, `${JSON.stringify({ batchId: 'cli-5', name: 'CLI five', subject: 'Art' })}\n`);
    expect((await runCli(['enqueue', file], { env: h.env })).code).toBe(0);
    const again = await runCli(['enqueue', file], { env: h.env });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/accepted 1 \(1 already known\), rejected 0/);
    await untilSynced(h, 'cli-5');
    expect(h.sandbox.state().byName['CLI five']).toBe(1);
  });

  it('a line separator (U+2028) inside a JSON string does not split the line', async () => {
    const stdin = `${JSON.stringify({ batchId: 'cli-ls', name: 'Line\u2028separated\u2029name', subject: 'Art' })}\n`;
    expect(stdin).toContain('\u2028');
    const result = await runCli(['enqueue'], { env: h.env, stdin });
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/accepted 1 \(0 already known\), rejected 0/);
    expect(result.code).toBe(0);
  });

  it('a file that cannot be read is a clear error, not a hang', async () => {
    const result = await runCli(['enqueue', '/nonexistent/events.ndjson'], { env: h.env });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/ENOENT|no such file/);
  });

  it('status prints counts by state, one batch with a masked link, and JSON (link masked unless --show-link)', async () => {
    // Read-only commands, side by side.
    const status = (...args: string[]) => runCli(['status', ...args], { env: h.env });
    const [all, one, shown, json, jsonShown, missing] = await Promise.all([
      status('--json'),
      status('cli-1'),
      status('cli-1', '--show-link'),
      status('cli-1', '--json'),
      status('cli-1', '--json', '--show-link'),
      status('nope'),
    ]);
    const counts = JSON.parse(all.stdout) as Record<string, number>;
    expect(counts.synced).toBeGreaterThanOrEqual(3);
    const row = await batch('cli-1');
    expect(one.stdout).toMatch(/state\s+synced/);
    expect(one.stdout).toContain(row!.classId!);
    expect(one.stdout).not.toContain(row!.joinLink!);
    expect(shown.stdout).toContain(row!.joinLink!);
    // --json masks it the same way (https://host/…(N chars)); --show-link gives it whole there too.
    expect(json.stdout).not.toContain(row!.joinLink!);
    const { origin } = new URL(row!.joinLink!);
    expect(JSON.parse(json.stdout)).toMatchObject({ batchId: 'cli-1', state: 'synced', joinLink: `${origin}/…(${row!.joinLink!.length} chars)` });
    expect(JSON.parse(jsonShown.stdout).joinLink).toBe(row!.joinLink);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`batch nope is not known under institute ${h.config.classroom.instituteId}\n`);
  });

  it('retry --failed puts failed batches back; they sync with one class each', async () => {
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected', count: 2 });
    const stdin = ['cli-6', 'cli-7'].map((id) => JSON.stringify({ batchId: id, name: `CLI ${id}`, subject: 'Art' })).join('\n');
    expect((await runCli(['enqueue'], { env: h.env, stdin })).code).toBe(0);
    await waitFor(async () => (await batch('cli-6'))?.state === 'failed' && (await batch('cli-7'))?.state === 'failed', 'both failed');
    const result = await runCli(['retry', '--failed'], { env: h.env });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/cli-6: failed → pending \(queued\)/);
    expect(result.stdout).toMatch(/2 batch\(es\) put back/);
    await untilAllSynced(h, ['cli-6', 'cli-7']);
    expect(h.sandbox.state().byName['CLI cli-6']).toBe(1);
    const [unknown, bare] = await Promise.all([runCli(['retry', 'nobody'], { env: h.env }), runCli(['retry'], { env: h.env })]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`nobody: not known under institute ${h.config.classroom.instituteId}\n`);
    expect(unknown.stdout).not.toMatch(/put back/);
    expect(bare.code).toBe(2);
  });

  it('retry of a synced batch says there is nothing to retry, and changes nothing', async () => {
    const before = await batch('cli-1');
    expect(before?.state).toBe('synced');
    const result = await runCli(['retry', 'cli-1'], { env: h.env });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('cli-1: already synced; nothing to retry\n');
    expect((await batch('cli-1'))?.updatedAt).toEqual(before?.updatedAt);
  });

  it('status, history and retry of a batch known only under another institute say where it is, and how to ask', async () => {
    const other = 'other-institute-b';
    const stdin = `${JSON.stringify({ batchId: 'cli-elsewhere', name: 'Elsewhere', subject: 'Art', instituteId: other })}\n`;
    expect((await runCli(['enqueue'], { env: h.env, stdin })).code).toBe(0);
    const hint = `not known under institute ${h.config.classroom.instituteId}; it is known under institute ${other}: add --institute ${other}`;
    // Each refused, changing nothing; and following the hint works: side by side.
    const [status, history, retry, found] = await Promise.all([
      runCli(['status', 'cli-elsewhere'], { env: h.env }),
      runCli(['history', 'cli-elsewhere'], { env: h.env }),
      runCli(['retry', 'cli-elsewhere'], { env: h.env }),
      runCli(['status', 'cli-elsewhere', '--institute', other], { env: h.env }),
    ]);
    expect([status.code, status.stderr]).toEqual([1, `batch cli-elsewhere is ${hint}\n`]);
    expect([history.code, history.stderr]).toEqual([1, `batch cli-elsewhere is ${hint}\n`]);
    expect([retry.code, retry.stderr]).toEqual([1, `cli-elsewhere: ${hint}\n`]);
    expect(found.code).toBe(0);
    expect(found.stdout).toContain(`batch       cli-elsewhere (institute ${other})`);
  });
});

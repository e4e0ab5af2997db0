// `classroom-sync import FILE.csv|FILE.ndjson`: back-fill through the same validation and recording
// as live events; bad rows are reported by line, field and reason; good rows sync.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { ImportFileError, importFile } from '../../src/commands/import.ts';
import { rowOf, untilAllSynced, untilSynced } from '../helpers/batches.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { killAllChildren, runCli, scratchDir } from '../helpers/cli.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';

const { h, defer } = useHarnessWithWorker();
defer(killAllChildren);
let dir: string;
beforeAll(() => {
  dir = scratchDir();
});
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

const CSV = [
  'batchId,name,subject,instituteId,classType,description',
  'csv-1,Algebra I,Maths,,LIVE,Mornings',
  'csv-2,"Physics, advanced",Physics,,,',
  'csv-3,,Chemistry,,,', // line 4: empty name
  'csv-4,Biology,Biology,../etc,,', // line 5: bad institute id
  'csv-5,Too,Many,,,,extra', // line 6: one field too many
  '', // line 7: blank lines are skipped
  'csv-6,"History ""modern""",History,,,', // line 8
  'csv-7,Art,Art,,,', // line 9
].join('\n');

describe('import: CSV', () => {
  it('accepts good rows (extra columns become class fields), rejects bad ones by line, field and reason, and exits 1', async () => {
    const result = await runCli(['import', file('batches.csv', `${CSV}\n`)], { env: h.env });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toContain('importing');
    expect(result.stdout).toMatch(/^imported 7\/7 rows · accepted 4 · rejected 3 \(/m);
    expect(result.stdout).toContain('accepted 4 (4 new, 0 already known), rejected 3');
    expect(result.stderr.trim().split('\n')).toEqual([
      'line 4: name must not be empty',
      'line 5: instituteId must be 1-128 letters, digits, ".", "_", "~" or "-"',
      'line 6: (row) has 7 fields but the header has 6',
    ]);

    const first = await rowOf(h, 'csv-1');
    expect(first?.event).toMatchObject({
      batchId: 'csv-1',
      name: 'Algebra I',
      instituteId: h.config.classroom.instituteId,
      extra: { classType: 'LIVE', description: 'Mornings' },
    });
    expect((await rowOf(h, 'csv-2'))?.event).toMatchObject({ name: 'Physics, advanced', extra: {} });
    expect((await rowOf(h, 'csv-6'))?.className).toBe('History "modern"');
    expect(await rowOf(h, 'csv-3')).toBeUndefined();

    // Back-filled batches sync like any other: exactly one class each, extra fields sent along.
    await untilAllSynced(h, ['csv-7', 'csv-1']);
    const synced = await rowOf(h, 'csv-1');
    const remote = h.sandbox.state().classes!.find((c) => c.id === synced!.classId);
    expect(remote).toMatchObject({ name: 'Algebra I', subject: 'Maths', classType: 'LIVE' });
    expect(h.sandbox.state().byName['Algebra I']).toBe(1);
  });

  it('importing the same file again is harmless: every good row is a duplicate', async () => {
    const result = await runCli(['import', file('again.csv', CSV)], { env: h.env });
    expect(result.stdout).toContain('accepted 4 (0 new, 4 already known), rejected 3');
    expect(h.sandbox.state().byName['Algebra I']).toBe(1);
  });

  it('exits 0 when every row is accepted', async () => {
    const result = await runCli(['import', file('clean.csv', 'batchId,name,subject\r\nclean-1,Clean One,Art\r\n')], { env: h.env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('accepted 1 (1 new, 0 already known), rejected 0');
  });

  it('refuses a file whose header lacks a required column, before reading any row', async () => {
    const result = await runCli(['import', file('noheader.csv', 'batch,name,subject\nx-1,X,Y\n')], { env: h.env });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('cannot import: the header row (line 1) has missing column(s) batchId');
    expect(await rowOf(h, 'x-1')).toBeUndefined();
  });

  it('stops at broken quoting instead of guessing row boundaries, keeping the rows before it', async () => {
    const report = await importFile(publishDepsOf(h), Readable.from(['batchId,name,subject\nq-1,Fine,Art\nq-2,"bad"quote,Art\nq-3,Never read,Art\n']), 'csv');
    expect(report.accepted).toBe(1);
    expect(report.rejected).toHaveLength(1);
    expect(report.rejected[0]).toMatchObject({ line: 3, problems: [{ field: '(file)' }] });
    expect(report.rejected[0]!.problems[0]!.reason).toMatch(/^is not valid CSV here \(Invalid Closing Quote.*\); no row after it was imported/);
    expect(await rowOf(h, 'q-3')).toBeUndefined();
  });

  it('an empty file is an error, not a silent success', async () => {
    await expect(importFile(publishDepsOf(h), Readable.from(['']), 'csv')).rejects.toBeInstanceOf(ImportFileError);
  });
});

describe('import: NDJSON', () => {
  it('accepts good lines and reports bad ones by line, with exit code 1', async () => {
    const lines = [
      JSON.stringify({ batchId: 'nd-1', name: 'ND One', subject: 'Maths' }),
      '{not json',
      JSON.stringify({ batchId: 'nd-2', subject: 'Maths' }),
      '',
      JSON.stringify({ batchId: 'nd-3', name: 'ND Three', subject: 'Maths', classType: 'LIVE' }),
    ];
    const result = await runCli(['import', file('events.ndjson', `${lines.join('\n')}\n`)], { env: h.env });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^imported 5\/5 lines · accepted 2 · rejected 2 \(/m);
    expect(result.stdout).toContain('accepted 2 (2 new, 0 already known), rejected 2');
    const errors = result.stderr.trim().split('\n');
    expect(errors[0]).toMatch(/^line 2: \(line\) is not valid JSON/);
    expect(errors[1]).toBe('line 3: name is required');
    await untilSynced(h, 'nd-3');
  });

  it('takes the format from --format when the name does not tell', async () => {
    const path = file('events.txt', `${JSON.stringify({ batchId: 'nd-9', name: 'ND Nine', subject: 'Art' })}\n`);
    const refused = await runCli(['import', path], { env: h.env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('cannot tell the format of');
    const result = await runCli(['import', path, '--format', 'ndjson'], { env: h.env });
    expect(result.code, result.stderr).toBe(0);
    expect((await rowOf(h, 'nd-9'))?.state).toBeDefined();
  });
});

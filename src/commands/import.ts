// `classroom-sync import FILE.csv|FILE.ndjson`: back-fills batches that exist in the integrator's
// system from before classroom-sync. Every row goes through the same validation and recording as a
// live event (publishBatches), so importing a file twice is harmless: known batches are duplicates.
import { createReadStream } from 'node:fs';
import { extname } from 'node:path';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { type PublishDeps, publishItems } from '../intake/publish.ts';
import type { FieldProblem } from '../intake/schema.ts';
import { enqueueNdjson } from './enqueue.ts';
import { ImportFileError } from './import-file-error.ts';
import { createProgress } from './progress.ts';

export { ImportFileError };

export type ImportFormat = 'csv' | 'ndjson';

export interface ImportReport {
  format: ImportFormat;
  /** Data rows (CSV, after the header) or lines (NDJSON) read so far. */
  rows: number;
  accepted: number;
  /** Accepted rows whose batch was already recorded (harmless re-imports). */
  duplicates: number;
  /** By file line number; for CSV the line where the row ends (the same line for one-line rows). */
  rejected: { line: number; problems: FieldProblem[] }[];
}

const REQUIRED_COLUMNS = ['batchId', 'name', 'subject'] as const;
/** Existing batches are history: they sync when nothing live waits (the backfill lane). */
const BACKFILL = { lane: 'backfill' } as const;
const CHUNK = 5_000;

export function formatOf(file: string, explicit?: string): ImportFormat {
  const format = explicit ?? { '.csv': 'csv', '.ndjson': 'ndjson', '.jsonl': 'ndjson' }[extname(file).toLowerCase()];
  if (format === 'csv' || format === 'ndjson') return format;
  throw new ImportFileError(`cannot tell the format of ${file}: name it .csv, .ndjson or .jsonl, or pass --format csv|ndjson`);
}

export async function importFile(deps: PublishDeps, input: Readable, format: ImportFormat, onProgress?: (report: ImportReport) => void): Promise<ImportReport> {
  if (format === 'csv') return importCsv(deps, input, onProgress);
  const report = await enqueueNdjson(
    deps,
    input,
    (r) => onProgress?.({ format, rows: r.lines, accepted: r.accepted, duplicates: r.duplicates, rejected: r.rejected }),
    BACKFILL,
  );
  return { format, rows: report.lines, accepted: report.accepted, duplicates: report.duplicates, rejected: report.rejected };
}

async function importCsv(deps: PublishDeps, input: Readable, onProgress?: (report: ImportReport) => void): Promise<ImportReport> {
  const report: ImportReport = { format: 'csv', rows: 0, accepted: 0, duplicates: 0, rejected: [] };
  let pending: { line: number; event: Record<string, string> }[] = [];
  const flush = async () => {
    const published = await publishItems(deps, pending, (p) => p.event, BACKFILL);
    for (const { item, outcome } of published) {
      if (!outcome.ok) report.rejected.push({ line: item.line, problems: outcome.problems });
      else {
        report.accepted += 1;
        if (outcome.duplicate) report.duplicates += 1;
      }
    }
    pending = [];
    onProgress?.(report);
  };
  // A syntax error must not drop the good rows parsed before it in the same chunk, so errors are
  // reported as 'skip' events instead of failing the stream; see stopAfter below.
  const parser = input.pipe(parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true, skip_records_with_error: true }));
  let broken: { line: number; message: string } | undefined;
  parser.on('skip', (error: Error & { lines?: number }) => {
    broken ??= { line: error.lines ?? 0, message: error.message };
  });
  let columns: string[] | undefined;
  for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    // After broken quoting the row boundaries are guesswork: import nothing past it.
    if (broken && info.lines > broken.line) continue;
    if (!columns) {
      columns = headerOf(record);
      continue;
    }
    report.rows += 1;
    const row = rowToEvent(columns, record);
    if (row.ok) pending.push({ line: info.lines, event: row.event });
    else report.rejected.push({ line: info.lines, problems: row.problems });
    if (pending.length >= CHUNK) await flush();
  }
  if (broken) {
    report.rejected.push({
      line: broken.line,
      problems: [
        {
          field: '(file)',
          reason: `is not valid CSV here (${broken.message}); no row after it was imported: fix the file and import it again (rows already imported count as duplicates)`,
        },
      ],
    });
  }
  if (pending.length) await flush();
  if (!columns) throw new ImportFileError(`the file is empty: expected a header row naming ${REQUIRED_COLUMNS.join(', ')}`);
  report.rejected.sort((a, b) => a.line - b.line);
  onProgress?.(report);
  return report;
}

function headerOf(record: string[]): string[] {
  const columns = record.map((c) => c.trim());
  const missing = REQUIRED_COLUMNS.filter((c) => !columns.includes(c));
  const repeated = columns.filter((c, i) => columns.indexOf(c) !== i);
  const problems = [
    missing.length ? `missing column(s) ${missing.join(', ')}` : '',
    repeated.length ? `repeated column(s) ${[...new Set(repeated)].join(', ')}` : '',
    columns.includes('') ? 'an unnamed column' : '',
  ].filter(Boolean);
  if (problems.length) {
    throw new ImportFileError(
      `the header row (line 1) has ${problems.join('; ')}. Expected: batchId,name,subject[,instituteId][,more class fields]; found: ${columns.join(',')}`,
    );
  }
  return columns;
}

type RowResult = { ok: true; event: Record<string, string> } | { ok: false; problems: FieldProblem[] };

/** Required columns always go through (an empty one is reported by validation); optional empty cells are left out. */
function rowToEvent(columns: string[], record: string[]): RowResult {
  if (record.length !== columns.length) {
    return { ok: false, problems: [{ field: '(row)', reason: `has ${record.length} fields but the header has ${columns.length}` }] };
  }
  const event: Record<string, string> = {};
  columns.forEach((column, i) => {
    const value = record[i] ?? '';
    if ((REQUIRED_COLUMNS as readonly string[]).includes(column) || value.trim() !== '') event[column] = value;
  });
  return { ok: true, event };
}

/** Counts the lines of a file, for a progress total before the import starts. */
export async function countLines(file: string): Promise<number> {
  let lines = 0;
  let last = 10;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines += 1;
    last = chunk[chunk.length - 1] ?? last;
  }
  return last === 10 ? lines : lines + 1;
}

export interface ImportCommandOptions {
  format?: string;
  /** Where the bar or progress lines go; default stdout. */
  stream?: NodeJS.WriteStream;
}

/** The command: progress while reading, then each rejected row and a summary. Returns the exit code. */
export async function runImport(deps: PublishDeps, file: string, options: ImportCommandOptions = {}): Promise<number> {
  const format = formatOf(file, options.format);
  const lines = await countLines(file);
  const total = Math.max(0, format === 'csv' ? lines - 1 : lines);
  const out = options.stream ?? process.stdout;
  out.write(`importing ${file} (${format.toUpperCase()}, ${total} ${format === 'csv' ? 'rows' : 'lines'})\n`);
  const progress = createProgress({ label: 'imported', total, unit: format === 'csv' ? 'rows' : 'lines', stream: out });
  let report: ImportReport;
  try {
    report = await importFile(deps, createReadStream(file), format, (r) =>
      progress.update(r.rows, { accepted: r.accepted, rejected: r.rejected.length }, Math.max(total, r.rows)),
    );
    progress.update(report.rows, { accepted: report.accepted, rejected: report.rejected.length }, report.rows);
  } finally {
    progress.stop();
  }
  for (const r of report.rejected) {
    process.stderr.write(`line ${r.line}: ${r.problems.map((p) => `${p.field} ${p.reason}`).join('; ')}\n`);
  }
  out.write(
    `accepted ${report.accepted} (${report.accepted - report.duplicates} new, ${report.duplicates} already known), rejected ${report.rejected.length}\n`,
  );
  if (report.accepted > 0) out.write('accepted batches are queued; a running `classroom-sync worker` syncs them\n');
  return report.rejected.length > 0 ? 1 : 0;
}

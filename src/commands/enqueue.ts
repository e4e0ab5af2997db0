// `classroom-sync enqueue [FILE]`: NDJSON batch-created events from a file or stdin.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import split from 'split2';
import { type PublishDeps, type PublishOptions, publishItems } from '../intake/publish.ts';
import type { FieldProblem } from '../intake/schema.ts';

export interface EnqueueReport {
  lines: number;
  accepted: number;
  duplicates: number;
  /** Changes whose version was not above the last one applied: ignored (each batch's history says so). */
  stale: number;
  rejected: { line: number; problems: FieldProblem[] }[];
}

const BATCH = 5_000;

export async function enqueueNdjson(
  deps: PublishDeps,
  input: Readable,
  onProgress?: (report: EnqueueReport) => void,
  options: PublishOptions = {},
): Promise<EnqueueReport> {
  const report: EnqueueReport = { lines: 0, accepted: 0, duplicates: 0, stale: 0, rejected: [] };
  let pending: { line: number; value: unknown }[] = [];
  const flush = async () => {
    const published = await publishItems(deps, pending, (p) => p.value, options);
    for (const { item, outcome } of published) {
      if (outcome.ok) {
        report.accepted += 1;
        if (outcome.duplicate) report.duplicates += 1;
        if (outcome.outcome === 'stale') report.stale += 1;
      } else report.rejected.push({ line: item.line, problems: outcome.problems });
    }
    pending = [];
    onProgress?.(report);
  };
  // Lines end at "\n" (or "\r\n") and nowhere else. node:readline also ends a line at U+2028 and
  // U+2029 on Node 24, which JSON allows unescaped inside strings: it would cut valid events in two.
  const lines = split(/\r?\n/);
  input.on('error', (error) => lines.destroy(error)); // pipe() does not carry a source's error along
  input.pipe(lines);
  for await (const text of lines) {
    report.lines += 1;
    if (text.trim() === '') continue;
    try {
      pending.push({ line: report.lines, value: JSON.parse(text) });
    } catch (error) {
      report.rejected.push({ line: report.lines, problems: [{ field: '(line)', reason: `is not valid JSON (${(error as Error).message})` }] });
    }
    if (pending.length >= BATCH) await flush();
  }
  if (pending.length) await flush();
  report.rejected.sort((a, b) => a.line - b.line);
  return report;
}

export function openInput(file: string | undefined): Readable {
  return file && file !== '-' ? createReadStream(file, { encoding: 'utf8' }) : process.stdin;
}

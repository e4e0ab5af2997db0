// What the demo prints at the end: the mappings as an aligned table (join links masked: a join
// link lets anyone into the class), and a summary that shows the exactly-once guard held.
import type { MappingRow as BatchRow } from '../mapping/index.ts';
import { maskJoinLink } from '../logging/logger.ts';
import type { SandboxState } from '../sandbox/index.ts';

export function formatMappingTable(rows: readonly BatchRow[]): string[] {
  const header = ['batch', 'state', 'tries', 'ClassID', 'join link (masked)'];
  const body = [...rows]
    .sort((a, b) => a.batchId.localeCompare(b.batchId))
    .map((r) => [r.batchId, r.state, String(r.attempts), r.classId ?? '-', maskJoinLink(r.joinLink) ?? '-']);
  return alignColumns([header, ...body]);
}

/** Pads every column to its widest cell; the last column is left ragged. The header row sets the columns. */
export function alignColumns(table: readonly [header: readonly string[], ...body: (readonly string[])[]]): string[] {
  const [header, ...body] = table;
  const widths = header.map((_, col) => Math.max(...table.map((row) => (row[col] ?? '').length)));
  // A cell in a column the header lacks has no width to pad to: it is left as it is.
  const line = (row: readonly string[]) =>
    row
      .map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col] ?? 0)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w, col) => '─'.repeat(col === widths.length - 1 ? Math.max(w, 4) : w)).join('  ');
  return [line(header), rule, ...body.map(line)];
}

export interface DemoSummary {
  allSynced: boolean;
  lines: string[];
}

export function summarize(rows: readonly BatchRow[], remote: SandboxState, elapsedMs: number): DemoSummary {
  const synced = rows.filter((r) => r.state === 'synced').length;
  const retries = rows.reduce((n, r) => n + Math.max(0, r.attempts - 1), 0);
  const unfinished = rows.filter((r) => r.state !== 'synced');
  const mine = new Set(rows.map((r) => r.className));
  // By the name as sent: a remote that rewrites names may store two batches' names alike.
  const duplicates = Object.entries(remote.bySentName).filter(([name, n]) => mine.has(name) && n > 1);
  const created = [...mine].reduce((n, name) => n + (remote.bySentName[name] ?? 0), 0);
  const faults = Object.values(remote.calls.faultsInjected).reduce((a, b) => a + b, 0);
  const lines = [
    `${synced}/${rows.length} batches synced in ${(elapsedMs / 1000).toFixed(1)} s; ${retries} retries; ` +
      `${remote.calls.totalCalls} remote calls${faults ? ` (${faults} with injected faults)` : ''}`,
    duplicates.length === 0
      ? `remote classes for these batches: ${created}; no batch got a second class`
      : `DUPLICATE classes on the remote for: ${duplicates.map(([name, n]) => `${name} ×${n}`).join(', ')}`,
  ];
  for (const r of unfinished) {
    lines.push(`${r.batchId} ended ${r.state}: ${r.lastError ?? 'see `classroom-sync status`'}`);
  }
  return { allSynced: unfinished.length === 0 && duplicates.length === 0, lines };
}

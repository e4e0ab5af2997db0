// A batch's audit trail as `classroom-sync history` prints it. Nothing here may carry a join link.
// A line ends with `trace <id>` when the trace that wrote it is not the one of the line above (the
// request, the job, the caller: see src/telemetry/trace-id.ts), `trace none` when it has none after
// one that had: the lines of one trace read as a block, and the id is there to paste into the
// tracing backend.
import type { TimelineEntry } from '../mapping/index.ts';

export type { TimelineEntry };

export function formatTimeline(entries: readonly TimelineEntry[]): string {
  return entries
    .map((e, i) => {
      const when = e.at.toISOString();
      const who = [e.attempt ? `attempt ${e.attempt}` : '', e.workerId ?? ''].filter(Boolean).join(' ');
      let what: string;
      if (e.type === 'remote_call') {
        const status = [e.httpStatus ? `HTTP ${e.httpStatus}` : '', e.bodyStatus && e.bodyStatus !== 200 ? `body ${e.bodyStatus}` : '']
          .filter(Boolean)
          .join(', ');
        what = `${e.operation} → ${e.outcome}${status ? ` (${status})` : ''} in ${e.durationMs} ms${e.error ? `: ${e.error}` : ''}`;
      } else if (e.fromState || e.toState) {
        what = `${e.type} ${e.fromState ?? '∅'} → ${e.toState}${e.classId ? ` class ${e.classId}` : ''}${e.error ? `: ${e.error}` : ''}`;
      } else {
        what = e.type;
      }
      const detail = e.detail ? ` ${JSON.stringify(e.detail)}` : '';
      return `${when}  ${what}${detail}${who ? `  [${who}]` : ''}${traceNote(e.traceId, entries[i - 1]?.traceId ?? null)}`;
    })
    .join('\n');
}

/** `  trace <id>` (or `  trace none`) when the line's trace is not the one of the line above, else nothing. */
function traceNote(traceId: string | null, above: string | null): string {
  if (traceId === above) return '';
  return `  trace ${traceId ?? 'none'}`;
}

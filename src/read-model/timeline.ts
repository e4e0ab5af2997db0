// A batch's audit trail as `classroom-sync history` prints it. Nothing here may carry a join link.
import type { TimelineEntry } from '../mapping/index.ts';

export type { TimelineEntry };

export function formatTimeline(entries: readonly TimelineEntry[]): string {
  return entries
    .map((e) => {
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
      return `${when}  ${what}${detail}${who ? `  [${who}]` : ''}`;
    })
    .join('\n');
}

// The per-batch audit trail. Writers append inside the transaction of the state change they
// explain; readers get a batch's timeline in order. Nothing here may carry a join link or secret.
import { and, asc, eq, inArray, lt, sql } from 'drizzle-orm';
import type { CallRecord } from '../classroom/client.ts';
import type { Db, DbOrTx } from '../db/client.ts';
import { type BatchEvent, type NewBatchEvent, batchClasses, batchEvents } from '../db/schema/index.ts';

export type PendingEvent = Omit<NewBatchEvent, 'batchRowId' | 'id'>;

export function remoteCallEvent(call: CallRecord, context: { attempt: number; workerId: string; classId: string | null }): PendingEvent {
  return {
    at: new Date(),
    type: 'remote_call',
    operation: call.operation,
    httpStatus: call.httpStatus ?? null,
    bodyStatus: call.bodyStatus ?? null,
    durationMs: Math.round(call.durationMs),
    outcome: call.outcome,
    error: call.error ?? null,
    attempt: context.attempt,
    workerId: context.workerId,
    classId: context.classId,
  };
}

export async function appendEvents(db: DbOrTx, batchRowId: number, events: readonly PendingEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.insert(batchEvents).values(events.map((e) => ({ ...e, batchRowId })));
}

export type TimelineEntry = Omit<BatchEvent, 'batchRowId'>;

/** A batch's events, oldest first; undefined when the batch is unknown. */
export async function readTimeline(db: Db, instituteId: string, batchId: string, limit = 1_000): Promise<TimelineEntry[] | undefined> {
  const [row] = await db
    .select({ id: batchClasses.id })
    .from(batchClasses)
    .where(and(eq(batchClasses.instituteId, instituteId), eq(batchClasses.batchId, batchId)));
  if (!row) return undefined;
  const events = await db.select().from(batchEvents).where(eq(batchEvents.batchRowId, row.id)).orderBy(asc(batchEvents.id)).limit(limit);
  return events.map(({ batchRowId: _omit, ...rest }) => rest);
}

/** Deletes events older than the retention, in slices so a large backlog never holds long locks. */
export async function pruneEvents(db: Db, retentionMs: number, slice = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const victims = db
      .select({ id: batchEvents.id })
      .from(batchEvents)
      .where(lt(batchEvents.at, sql`now() - (${retentionMs} * interval '1 millisecond')`))
      .limit(slice);
    const deleted = await db.delete(batchEvents).where(inArray(batchEvents.id, victims)).returning({ id: batchEvents.id });
    total += deleted.length;
    if (deleted.length < slice) return total;
  }
}

export function formatTimeline(entries: readonly TimelineEntry[]): string {
  return entries
    .map((e) => {
      const when = e.at.toISOString();
      const who = [e.attempt ? `attempt ${e.attempt}` : '', e.workerId ?? ''].filter(Boolean).join(' ');
      let what: string;
      if (e.type === 'remote_call') {
        const status = [e.httpStatus ? `HTTP ${e.httpStatus}` : '', e.bodyStatus && e.bodyStatus !== 200 ? `body ${e.bodyStatus}` : ''].filter(Boolean).join(', ');
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

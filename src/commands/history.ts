// `classroom-sync history BATCH_ID [--json]`: what happened to a batch, and when.
import { formatTimeline, readTimeline } from '../audit/events.ts';
import type { Db } from '../db/client.ts';

export async function printHistory(db: Db, instituteId: string, batchId: string, json: boolean, out = console.log): Promise<boolean> {
  const timeline = await readTimeline(db, instituteId, batchId);
  if (!timeline) return false;
  out(json ? JSON.stringify(timeline) : formatTimeline(timeline) || '(no events recorded)');
  return true;
}

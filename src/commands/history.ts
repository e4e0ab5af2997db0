// `classroom-sync history BATCH_ID [--json]`: what happened to a batch, and when: its audit trail,
// then the webhook messages that told the integrator (never their data: it holds the join link).
import type { Db } from '../mapping/index.ts';
import {
  type TimelineEntry,
  findBatch,
  formatBatchDeliveries,
  formatTimeline,
  institutesOf,
  notKnownUnder,
  outbox,
  readTimeline,
} from '../read-model/index.ts';

export interface HistoryRequest {
  batchId: string;
  instituteId: string;
  json: boolean;
}

export interface HistoryIo {
  out(line: string): void;
  err(line: string): void;
}

/** A webhook message in `history --json`, beside the events: `at` is when its event happened. */
export interface WebhookEntry {
  type: 'webhook';
  at: Date;
  webhook: outbox.DeliveryView;
}

export type HistoryEntry = TimelineEntry | WebhookEntry;

const consoleIo: HistoryIo = { out: (line) => console.log(line), err: (line) => console.error(line) };

/** Returns the exit code: 1 when the batch is not known under the institute, else 0. */
export async function runHistory(db: Db, request: HistoryRequest, io: HistoryIo = consoleIo): Promise<number> {
  const key = { instituteId: request.instituteId, batchId: request.batchId };
  const row = await findBatch(db, key);
  const timeline = row && (await readTimeline(db, key));
  if (!row || !timeline) {
    io.err(`batch ${request.batchId} is ${notKnownUnder(request.instituteId, await institutesOf(db, request.batchId))}`);
    return 1;
  }
  const messages = await outbox.messagesOfBatch(db, row.id);
  if (request.json) {
    io.out(JSON.stringify(interleave(timeline, messages)));
    return 0;
  }
  io.out(formatTimeline(timeline) || '(no events recorded)');
  io.out('');
  io.out(messages.length > 0 ? `webhook messages\n${indent(formatBatchDeliveries(messages))}` : 'webhook messages: none');
  return 0;
}

/**
 * One array, oldest first, as `history --json` always printed: the events in their order, each
 * webhook message (`type: "webhook"`) placed after the events before or at its own time.
 */
function interleave(events: readonly TimelineEntry[], messages: readonly outbox.DeliveryView[]): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  let next = 0;
  const upTo = (at: number) => {
    for (let webhook = messages[next]; webhook && webhook.occurredAt.getTime() < at; webhook = messages[++next]) {
      entries.push({ type: 'webhook', at: webhook.occurredAt, webhook });
    }
  };
  for (const event of events) {
    upTo(event.at.getTime());
    entries.push(event);
  }
  upTo(Number.POSITIVE_INFINITY);
  return entries;
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');

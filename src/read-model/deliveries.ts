// Webhook messages as `classroom-sync deliveries` and `history` print them. Never a message's data:
// it holds the batch's join link, a secret (outbox.DeliveryView leaves it out).
import type { outbox } from '../mapping/index.ts';

type DeliveryView = outbox.DeliveryView;

/**
 * What the endpoint last answered: why the last attempt failed (`HTTP 500`, `timeout after 5000 ms`,
 * `connection refused (ECONNREFUSED)`…), else its status (`HTTP 200`), or `-` before the first attempt.
 */
export function lastAnswerOf(message: Pick<DeliveryView, 'lastStatus' | 'lastError'>): string {
  if (message.lastError) return message.lastError;
  return message.lastStatus === null ? '-' : `HTTP ${message.lastStatus}`;
}

type Column = readonly [header: string, cell: (message: DeliveryView) => string];

const COLUMNS = {
  messageId: ['MESSAGE ID', (m) => m.messageId],
  type: ['TYPE', (m) => m.type],
  institute: ['INSTITUTE', (m) => m.instituteId],
  batch: ['BATCH', (m) => m.batchId],
  status: ['STATUS', (m) => m.status],
  attempts: ['ATTEMPTS', (m) => String(m.attempts)],
  // Only a pending message has a next attempt; the others are finished until a `redeliver`.
  nextAttempt: ['NEXT ATTEMPT', (m) => m.nextAttemptAt?.toISOString() ?? '-'],
  lastAnswer: ['LAST ANSWER', lastAnswerOf],
} satisfies Record<string, Column>;

/** Every message, one line each under a header: the listing of `classroom-sync deliveries`. */
export function formatDeliveries(messages: readonly DeliveryView[]): string {
  const { messageId, type, institute, batch, status, attempts, nextAttempt, lastAnswer } = COLUMNS;
  return table([messageId, type, institute, batch, status, attempts, nextAttempt, lastAnswer], messages);
}

/** One batch's messages (its institute and batch go without saying): the section of `history`. */
export function formatBatchDeliveries(messages: readonly DeliveryView[]): string {
  const { type, messageId, status, attempts, nextAttempt, lastAnswer } = COLUMNS;
  return table([type, messageId, status, attempts, nextAttempt, lastAnswer], messages);
}

/** Columns padded to their widest cell, two spaces apart; the last one (free text) is not padded. */
function table(columns: readonly Column[], messages: readonly DeliveryView[]): string {
  const rows = [columns.map(([header]) => header), ...messages.map((m) => columns.map(([, cell]) => cell(m)))];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}

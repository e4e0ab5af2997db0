// What an answer means for a message: delivered, tried again later, or given up.
import { type Clock, systemClock } from '../support/clock.ts';
import { parseRetryAfter, retryDelayMs } from './schedule.ts';
import type { PostResult } from './http.ts';
import type { WebhookSettings } from './settings.ts';

export type Verdict =
  | { outcome: 'delivered'; status: number }
  | { outcome: 'retry'; status: number | null; error: string; delayMs: number; retryForMs: number }
  | { outcome: 'given_up'; status: number | null; error: string };

/**
 * 2xx delivers. No answer (a timeout, a connection error), 408, 429, 5xx and 3xx (redirects are not
 * followed; the endpoint may be moved back) are tried again on the schedule. Any other 4xx says the
 * endpoint will never take this message: it is given up, and `redeliver` can send it again. A
 * Retry-After date counts from `clock`'s now (epoch ms).
 */
export function verdictOf(
  result: PostResult,
  attempt: number,
  settings: Pick<WebhookSettings, 'retryScheduleMs' | 'retryForMs'>,
  clock: Pick<Clock, 'now'> = systemClock,
): Verdict {
  const { status } = result;
  if (status !== undefined && status >= 200 && status < 300) return { outcome: 'delivered', status };
  if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) {
    return { outcome: 'given_up', status, error: `HTTP ${status}: the endpoint refused the message; not tried again` };
  }
  const error = status === undefined ? (result.error ?? 'no answer') : `HTTP ${status}`;
  const delayMs = retryDelayMs(settings.retryScheduleMs, attempt, parseRetryAfter(result.retryAfter, clock));
  return { outcome: 'retry', status: status ?? null, error, delayMs, retryForMs: settings.retryForMs };
}

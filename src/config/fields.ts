// The shapes of environment values that several settings share (src/config/config.ts reads them).
import { z } from 'zod';
import { parseDuration } from './duration.ts';
import { DEFAULT_RETRY_SCHEDULE_MS, webhookFields } from '../webhooks/settings.ts';

export const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
export const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be milliseconds or a duration such as 500ms, 30s, 15m, 1h' });
    return z.NEVER;
  }
  return ms;
});

/** `true` or `false`, nothing else: a typo must not flip a setting that decides what happens to classes. */
export const flag = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true');

/** "5s,5m,30m": a list of durations, in order. */
export const durationList = z.string().transform((value, ctx) => {
  const parts = value.split(',').map((part) => parseDuration(part));
  if (parts.length === 0 || parts.some((ms) => ms === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'must be durations separated by commas, such as 5s,5m,30m,2h' });
    return z.NEVER;
  }
  return parts as number[];
});

/** WEBHOOK_*: where messages go and how they are delivered (see src/webhooks). */
export const webhookEnv = {
  WEBHOOK_URL: webhookFields.url.optional(),
  WEBHOOK_SECRET: webhookFields.secrets.optional(),
  WEBHOOK_TIMEOUT: duration.pipe(z.number().min(100, 'must be at least 100ms').max(60_000, 'must be at most 60s')).default(5_000),
  WEBHOOK_CONCURRENCY: int(1, 200).default(8),
  WEBHOOK_RETRY_SCHEDULE: durationList.default([...DEFAULT_RETRY_SCHEDULE_MS]),
  WEBHOOK_RETRY_FOR: duration.default(3 * 86_400_000),
};

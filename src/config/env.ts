// Every environment variable the service reads, with its default and its checks (loadConfig parses them).
import { z } from 'zod';
import { accessEnv } from '../access/settings.ts';
import { classroomFields as f } from '../classroom/settings.ts';
import { duration, flag, int, webhookEnv } from './fields.ts';
import { redisUrlProblem } from '../redis/url.ts';

/** Values the built-in sandbox accepts, so a fresh checkout syncs with no `.env` at all. */
export const SANDBOX_DEFAULTS = Object.freeze({
  CLASSROOM_BASE_URL: 'http://127.0.0.1:4010',
  CLASSROOM_USER_ID: 'sandbox-user',
  CLASSROOM_API_KEY: 'sandboxKey0123456789abcdefABCDEF',
  CLASSROOM_X_API_KEY: 'sandbox-x-api-key',
  CLASSROOM_INSTITUTE_ID: '6f1c0c8e-3b7a-4f51-9a7c-2d7c1f6e9b10',
  CLASSROOM_USER_AGENT: 'VendorIntegrations/sandbox',
  CLASSROOM_NAMESPACE: 'sandbox',
});

export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).default('postgres://postgres@127.0.0.1:5432/classroom_sync'),
  REDIS_URL: z
    .string()
    .superRefine((url, ctx) => {
      const problem = redisUrlProblem(url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .default('redis://127.0.0.1:6379'),
  QUEUE_PREFIX: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_{}.-]+$/, 'must be letters, digits, "_", "-", "." or a {hash tag}')
    .default('classroom-sync'),

  CLASSROOM_BASE_URL: f.baseUrl.default(SANDBOX_DEFAULTS.CLASSROOM_BASE_URL),
  CLASSROOM_USER_ID: f.userId.default(SANDBOX_DEFAULTS.CLASSROOM_USER_ID),
  CLASSROOM_API_KEY: f.apiKey.default(SANDBOX_DEFAULTS.CLASSROOM_API_KEY),
  CLASSROOM_X_API_KEY: f.xApiKey.default(SANDBOX_DEFAULTS.CLASSROOM_X_API_KEY),
  CLASSROOM_INSTITUTE_ID: f.instituteId.default(SANDBOX_DEFAULTS.CLASSROOM_INSTITUTE_ID),
  CLASSROOM_USER_AGENT: f.userAgent.default(SANDBOX_DEFAULTS.CLASSROOM_USER_AGENT),
  CLASSROOM_NAMESPACE: f.namespace.default(SANDBOX_DEFAULTS.CLASSROOM_NAMESPACE),
  CLASSROOM_NAMESPACE_HEADER: f.namespaceHeader.default('x-service-namespace'),
  CLASSROOM_ADD_CLASS_PATH: f.addClassPath.default('/addClass'),
  CLASSROOM_EDIT_CLASS_METHOD: f.editClassMethod.default('POST'),
  CLASSROOM_ACCOUNTS_FILE: z.string().min(1).optional(),
  CLASSROOM_TIMEOUT: duration.default(10_000),
  CLASSROOM_RATE_LIMIT_PER_MINUTE: f.ratePerMinute.default(500),
  CLASSROOM_RATE_WINDOW: duration.pipe(z.number().min(1_000, 'must be at least 1s').max(3_600_000, 'must be at most 1h')).default(60_000),
  CLASSROOM_THROTTLE_PAUSE: duration.default(15_000),
  CLASSROOM_CLASS_NAME_TEMPLATE: z
    .string()
    .min(1)
    .max(200)
    .refine((t) => t.includes('{name}') || t.includes('{batchId}'), 'must contain {name} or {batchId}')
    .default('{name}'),
  CLASSROOM_NAME_MIN_CUT: int(1, 200).default(16),
  CLASSROOM_KEY_PROBE_EVERY: duration.default(30_000),
  CLASSROOM_ARCHIVE_ON_CANCEL: flag.default(true),

  SYNC_CONCURRENCY: int(1, 1000).default(8),
  SYNC_BACKGROUND_CONCURRENCY: int(1, 100).default(2),
  SYNC_ATTEMPTS: int(1, 100).default(10),
  SYNC_BACKOFF_BASE: duration.default(1_000),
  SYNC_BACKOFF_MAX: duration.default(5 * 60_000),
  SYNC_LEASE: duration.pipe(z.number().min(1_000, 'must be at least 1s (a heartbeat renews it every third of it)')).default(3_000),
  SYNC_JOB_LOCK: duration.pipe(z.number().min(1_000, 'must be at least 1s (BullMQ renews it every half of it)')).default(2_000),
  SYNC_SETTLE: duration.default(5_000),
  SYNC_READ_LAG: duration.default(30_000),
  SYNC_SWEEP_EVERY: duration.default(60_000),
  SYNC_STUCK_AFTER: duration.default(2 * 60_000),
  SYNC_LIVE_LANE_BOUND: duration.default(60_000),
  SHUTDOWN_GRACE: duration.default(30_000),
  RECONCILE_EVERY: duration.default(15 * 60_000),
  RECONCILE_REPAIR_NAMES: flag.default(false),
  BATCH_EVENTS_RETENTION: duration.default(30 * 86_400_000),
  ...webhookEnv,
  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  ...accessEnv,
});

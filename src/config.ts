// The only reader of process.env. Parsed once, validated, frozen; a bad variable fails fast by name.
import { z } from 'zod';
import { parseDuration } from './duration.ts';
import { hasHashTag, isClusterUrl, redisUrlProblem } from './redis-url.ts';

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

const safeToken = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._~-]+$/, 'must be letters, digits, ".", "_", "~" or "-" (no "/", "?", "#" or spaces)');

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be milliseconds or a duration such as 500ms, 30s, 15m, 1h' });
    return z.NEVER;
  }
  return ms;
});

const envSchema = z.object({
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

  CLASSROOM_BASE_URL: z.url({ protocol: /^https?$/ }).default(SANDBOX_DEFAULTS.CLASSROOM_BASE_URL),
  CLASSROOM_USER_ID: z.string().min(1).max(200).default(SANDBOX_DEFAULTS.CLASSROOM_USER_ID),
  CLASSROOM_API_KEY: z
    .string()
    .regex(/^[A-Za-z0-9]{32}$/, 'must be the 32-character alphanumeric key issued with the user id')
    .default(SANDBOX_DEFAULTS.CLASSROOM_API_KEY),
  CLASSROOM_X_API_KEY: z.string().min(1).max(500).default(SANDBOX_DEFAULTS.CLASSROOM_X_API_KEY),
  CLASSROOM_INSTITUTE_ID: safeToken.default(SANDBOX_DEFAULTS.CLASSROOM_INSTITUTE_ID),
  CLASSROOM_USER_AGENT: z.string().min(1).max(300).default(SANDBOX_DEFAULTS.CLASSROOM_USER_AGENT),
  CLASSROOM_NAMESPACE: z.string().min(1).max(200).default(SANDBOX_DEFAULTS.CLASSROOM_NAMESPACE),
  CLASSROOM_NAMESPACE_HEADER: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
    .transform((h) => h.toLowerCase())
    .default('x-service-namespace'),
  CLASSROOM_ADD_CLASS_PATH: z.string().regex(/^\/[A-Za-z0-9/_-]*$/, 'must be a path starting with "/"').default('/addClass'),
  CLASSROOM_EDIT_CLASS_METHOD: z.enum(['POST', 'PUT']).default('POST'),
  CLASSROOM_TIMEOUT: duration.default(10_000),
  CLASSROOM_RATE_LIMIT_PER_MINUTE: int(1, 1_000_000).default(500),
  CLASSROOM_THROTTLE_PAUSE: duration.default(15_000),
  CLASSROOM_CLASS_NAME_TEMPLATE: z
    .string()
    .min(1)
    .max(200)
    .refine((t) => t.includes('{name}') || t.includes('{batchId}'), 'must contain {name} or {batchId}')
    .default('{name}'),

  SYNC_CONCURRENCY: int(1, 1000).default(8),
  SYNC_ATTEMPTS: int(1, 100).default(10),
  SYNC_BACKOFF_BASE: duration.default(1_000),
  SYNC_BACKOFF_MAX: duration.default(5 * 60_000),
  SYNC_LEASE: duration.default(60_000),
  SYNC_JOB_LOCK: duration.default(30_000),
  SYNC_SETTLE: duration.default(5_000),
  SYNC_SWEEP_EVERY: duration.default(60_000),
  SYNC_STUCK_AFTER: duration.default(2 * 60_000),
  SHUTDOWN_GRACE: duration.default(30_000),
  RECONCILE_EVERY: duration.default(15 * 60_000),
  BATCH_EVENTS_RETENTION: duration.default(30 * 86_400_000),

  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
});

export type Env = z.input<typeof envSchema>;
type Parsed = z.output<typeof envSchema>;

export interface Config {
  readonly env: Parsed['NODE_ENV'];
  readonly logLevel: Parsed['LOG_LEVEL'];
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly queuePrefix: string;
  readonly classroom: Readonly<{
    baseUrl: string;
    userId: string;
    apiKey: string;
    xApiKey: string;
    instituteId: string;
    userAgent: string;
    namespace: string;
    namespaceHeader: string;
    addClassPath: string;
    editClassMethod: 'POST' | 'PUT';
    timeoutMs: number;
    rateLimitPerMinute: number;
    throttlePauseMs: number;
    classNameTemplate: string;
  }>;
  readonly sync: Readonly<{
    concurrency: number;
    attempts: number;
    backoffBaseMs: number;
    backoffMaxMs: number;
    leaseMs: number;
    jobLockMs: number;
    settleMs: number;
    sweepEveryMs: number;
    stuckAfterMs: number;
    shutdownGraceMs: number;
    reconcileEveryMs: number;
    eventsRetentionMs: number;
  }>;
  readonly http: Readonly<{ port: number; host: string; apiToken: string | undefined }>;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly { variable: string; reason: string }[]) {
    super(
      `Invalid configuration; fix these environment variables and start again:\n` +
        problems.map((p) => `  ${p.variable}: ${p.reason}`).join('\n'),
    );
  }
}

/** Reads the environment once. Empty strings count as unset, as in most `.env` tooling. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  const env = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const result = envSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => ({ variable: String(issue.path[0] ?? '?'), reason: issue.message })),
    );
  }
  const e = result.data;
  if (e.SYNC_LEASE < e.CLASSROOM_TIMEOUT * 3) {
    throw new ConfigError([
      { variable: 'SYNC_LEASE', reason: `must be at least 3 × CLASSROOM_TIMEOUT (${e.CLASSROOM_TIMEOUT * 3} ms) so a request always ends inside its lease` },
    ]);
  }
  return deepFreeze({
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    queuePrefix: queuePrefixFor(e.REDIS_URL, e.QUEUE_PREFIX, env.QUEUE_PREFIX !== undefined),
    classroom: {
      baseUrl: e.CLASSROOM_BASE_URL.replace(/\/+$/, ''),
      userId: e.CLASSROOM_USER_ID,
      apiKey: e.CLASSROOM_API_KEY,
      xApiKey: e.CLASSROOM_X_API_KEY,
      instituteId: e.CLASSROOM_INSTITUTE_ID,
      userAgent: e.CLASSROOM_USER_AGENT,
      namespace: e.CLASSROOM_NAMESPACE,
      namespaceHeader: e.CLASSROOM_NAMESPACE_HEADER,
      addClassPath: e.CLASSROOM_ADD_CLASS_PATH,
      editClassMethod: e.CLASSROOM_EDIT_CLASS_METHOD,
      timeoutMs: e.CLASSROOM_TIMEOUT,
      rateLimitPerMinute: e.CLASSROOM_RATE_LIMIT_PER_MINUTE,
      throttlePauseMs: e.CLASSROOM_THROTTLE_PAUSE,
      classNameTemplate: e.CLASSROOM_CLASS_NAME_TEMPLATE,
    },
    sync: {
      concurrency: e.SYNC_CONCURRENCY,
      attempts: e.SYNC_ATTEMPTS,
      backoffBaseMs: e.SYNC_BACKOFF_BASE,
      backoffMaxMs: e.SYNC_BACKOFF_MAX,
      leaseMs: e.SYNC_LEASE,
      jobLockMs: e.SYNC_JOB_LOCK,
      settleMs: e.SYNC_SETTLE,
      sweepEveryMs: e.SYNC_SWEEP_EVERY,
      stuckAfterMs: e.SYNC_STUCK_AFTER,
      shutdownGraceMs: e.SHUTDOWN_GRACE,
      reconcileEveryMs: e.RECONCILE_EVERY,
      eventsRetentionMs: e.BATCH_EVENTS_RETENTION,
    },
    http: { port: e.PORT, host: e.HOST, apiToken: e.API_TOKEN },
  });
}

/**
 * On a Redis Cluster every key of a queue must hash to one slot (BullMQ's scripts touch several
 * keys at once), so the prefix needs a {hash tag}. The default is wrapped for you; a prefix you set
 * yourself is never rewritten behind your back: it fails here instead.
 */
function queuePrefixFor(redisUrl: string, prefix: string, explicit: boolean): string {
  if (!isClusterUrl(redisUrl) || hasHashTag(prefix)) return prefix;
  if (!explicit) return `{${prefix}}`;
  throw new ConfigError([
    {
      variable: 'QUEUE_PREFIX',
      reason: `must contain a non-empty {hash tag} when REDIS_URL is a Redis Cluster, so every key of a queue lands in one slot: e.g. QUEUE_PREFIX={${prefix}}`,
    },
  ]);
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) if (child && typeof child === 'object') deepFreeze(child);
  return Object.freeze(value);
}

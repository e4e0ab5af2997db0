// The only reader of process.env. Parsed once, validated, frozen; a bad variable fails fast by name.
import type { z } from 'zod';
import { type AccessSettings, readAccess } from '../access/settings.ts';
import { tokenDigest } from '../access/tokens.ts';
import { resolveAccounts } from '../accounts/resolve.ts';
import type { Account } from '../accounts/types.ts';
import type { ClassroomSettings } from '../classroom/settings.ts';
import { envSchema } from './env.ts';
import { ConfigError } from './error.ts';
import { hasHashTag, isClusterUrl } from '../redis/url.ts';
import { type WebhookSettings, webhookSettingsOf } from '../webhooks/settings.ts';

export { SANDBOX_DEFAULTS } from './env.ts';
export { ConfigError } from './error.ts';

export type Env = z.input<typeof envSchema>;
/** Every environment variable `loadConfig` reads (tests hold .env.example, the README and compose to it). */
export const CONFIG_VARIABLES: readonly (keyof Env)[] = Object.freeze(Object.keys(envSchema.shape) as (keyof Env)[]);
type Parsed = z.output<typeof envSchema>;

export interface Config {
  readonly env: Parsed['NODE_ENV'];
  readonly logLevel: Parsed['LOG_LEVEL'];
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly queuePrefix: string;
  /** The default account's settings; `instituteId` is where batches sent without one go. */
  readonly classroom: Readonly<ClassroomSettings>;
  /** Every account, the default one included (one, "default", without CLASSROOM_ACCOUNTS_FILE). */
  readonly accounts: readonly Account[];
  /** CLASSROOM_ACCOUNTS_FILE, when set. */
  readonly accountsFile: string | undefined;
  readonly sync: Readonly<{
    concurrency: number;
    /** Jobs of the operator and backfill lanes each process runs at once (their own worker slots). */
    backgroundConcurrency: number;
    attempts: number;
    backoffBaseMs: number;
    backoffMaxMs: number;
    /** How long a batch's lease lasts after its last renewal; a heartbeat renews it every third of that. */
    leaseMs: number;
    /** BullMQ's job lock: a dead process's jobs come back within it and half of it (the stall check). */
    jobLockMs: number;
    settleMs: number;
    /** How long after a write the remote may still not show it (404s, absent from the listing). */
    readLagMs: number;
    sweepEveryMs: number;
    stuckAfterMs: number;
    /** How long a live batch may wait in its lane before ClassroomSyncLiveLaneSlow fires (exported as a gauge). */
    liveLaneBoundMs: number;
    shutdownGraceMs: number;
    reconcileEveryMs: number;
    /** CLASSROOM_ARCHIVE_ON_CANCEL (a cancelled batch's class is archived); RECONCILE_REPAIR_NAMES (a drifted name is edited back). */
    archiveOnCancel: boolean;
    repairNames: boolean;
    eventsRetentionMs: number;
  }>;
  /** PORT, HOST, and who may call them (API_TOKEN, API_CLIENTS_FILE, DASHBOARD_SESSION_SECRET; see src/access). */
  readonly http: Readonly<{ port: number; host: string } & AccessSettings>;
  /** WEBHOOK_*: the default endpoint and how messages are delivered (accounts may have endpoints of their own). */
  readonly webhooks: Readonly<WebhookSettings>;
}

/** Reads the environment once. Empty strings count as unset, as in most `.env` tooling. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  const env = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const result = envSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => ({ variable: String(issue.path[0] ?? '?'), reason: issue.message })));
  }
  const e = result.data;
  const accounts = accountsOf(e, env.CLASSROOM_INSTITUTE_ID !== undefined);
  return deepFreeze({
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    queuePrefix: queuePrefixFor(e.REDIS_URL, e.QUEUE_PREFIX, env.QUEUE_PREFIX !== undefined),
    classroom: { ...accounts.defaultAccount.classroom, instituteId: accounts.defaultInstituteId },
    accounts: accounts.accounts,
    accountsFile: e.CLASSROOM_ACCOUNTS_FILE,
    sync: {
      concurrency: e.SYNC_CONCURRENCY,
      backgroundConcurrency: e.SYNC_BACKGROUND_CONCURRENCY,
      attempts: e.SYNC_ATTEMPTS,
      backoffBaseMs: e.SYNC_BACKOFF_BASE,
      backoffMaxMs: e.SYNC_BACKOFF_MAX,
      leaseMs: e.SYNC_LEASE,
      jobLockMs: e.SYNC_JOB_LOCK,
      settleMs: e.SYNC_SETTLE,
      readLagMs: e.SYNC_READ_LAG,
      sweepEveryMs: e.SYNC_SWEEP_EVERY,
      stuckAfterMs: e.SYNC_STUCK_AFTER,
      liveLaneBoundMs: e.SYNC_LIVE_LANE_BOUND,
      shutdownGraceMs: e.SHUTDOWN_GRACE,
      reconcileEveryMs: e.RECONCILE_EVERY,
      archiveOnCancel: e.CLASSROOM_ARCHIVE_ON_CANCEL,
      repairNames: e.RECONCILE_REPAIR_NAMES,
      eventsRetentionMs: e.BATCH_EVENTS_RETENTION,
    },
    http: { port: e.PORT, host: e.HOST, ...accessOf(e) },
    webhooks: webhooksOf(e),
  });
}

function accessOf(e: Parsed): AccessSettings {
  const result = readAccess(e.API_CLIENTS_FILE);
  if (!result.ok) throw new ConfigError(result.problems.map((reason) => ({ variable: 'API_CLIENTS_FILE', reason })));
  const digest = e.API_TOKEN === undefined ? undefined : tokenDigest(e.API_TOKEN);
  const same = result.fileClients.find((client) => client.digest === digest);
  if (same) throw new ConfigError([{ variable: 'API_TOKEN', reason: `is also the token of client "${same.name}" in API_CLIENTS_FILE; give each its own` }]);
  return {
    apiToken: e.API_TOKEN,
    clientsFile: e.API_CLIENTS_FILE,
    fileClients: result.fileClients,
    sessionSecret: e.DASHBOARD_SESSION_SECRET,
    trustProxy: e.TRUST_PROXY,
  };
}

function webhooksOf(e: Parsed): WebhookSettings {
  const { WEBHOOK_URL: url, WEBHOOK_SECRET: secrets, WEBHOOK_TIMEOUT: timeoutMs, WEBHOOK_CONCURRENCY: concurrency } = e;
  const result = webhookSettingsOf({ url, secrets, timeoutMs, concurrency, retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE, retryForMs: e.WEBHOOK_RETRY_FOR });
  if (!result.ok) throw new ConfigError([result.problem]);
  return result.settings;
}

/** The CLASSROOM_* settings as the default account, and the accounts file's accounts (src/accounts). */
function accountsOf(e: Parsed, instituteExplicit: boolean) {
  const result = resolveAccounts({
    env: {
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
      rateLimitWindowMs: e.CLASSROOM_RATE_WINDOW,
      throttlePauseMs: e.CLASSROOM_THROTTLE_PAUSE,
      classNameTemplate: e.CLASSROOM_CLASS_NAME_TEMPLATE,
      nameMinCut: e.CLASSROOM_NAME_MIN_CUT,
      keyProbeEveryMs: e.CLASSROOM_KEY_PROBE_EVERY,
    },
    instituteExplicit,
    file: e.CLASSROOM_ACCOUNTS_FILE,
  });
  if (!result.ok) throw new ConfigError(result.problems.map((reason) => ({ variable: 'CLASSROOM_ACCOUNTS_FILE', reason })));
  return result;
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

/**
 * The configuration with `patch` applied to the default account (and `config.classroom`), or with
 * `every: true` to every account (the demo points them all at its own sandbox).
 */
export function withClassroom(config: Config, patch: Partial<ClassroomSettings>, options: { every?: boolean } = {}): Config {
  const target = config.accounts.find((a) => a.instituteIds.includes(config.classroom.instituteId) || a.anyInstitute) ?? config.accounts[0];
  const accounts = config.accounts.map((account) =>
    options.every || account === target ? { ...account, classroom: { ...account.classroom, ...patch } } : account,
  );
  return { ...config, classroom: { ...config.classroom, ...patch }, accounts };
}

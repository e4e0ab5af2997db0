// What the sync worker is told by the configuration: the one file of src/sync that reads a `Config`
// (lint's `config-through-settings`). The composition root (src/runtime) builds these once; every
// part of the worker is handed the settings it uses, never the whole configuration.
import type { Config } from '../config/config.ts';
import type { SyncSettings } from './types.ts';

export interface SyncWorkerSettings {
  redisUrl: string;
  queuePrefix: string;
  /** What a run follows (the state machine's settings). */
  run: SyncSettings;
  /** Jobs of the under-way and live lanes each process runs at once. */
  concurrency: number;
  /** Jobs of the operator and backfill lanes each process runs at once (their own worker slots). */
  backgroundConcurrency: number;
  /** BullMQ's job lock: a dead process's jobs come back within it and half of it (the stall check). */
  jobLockMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  sweepEveryMs: number;
  stuckAfterMs: number;
  shutdownGraceMs: number;
  eventsRetentionMs: number;
}

type Source = Pick<Config, 'sync' | 'accounts' | 'classroom' | 'redisUrl' | 'queuePrefix'>;

export function syncWorkerSettingsOf(config: Source): SyncWorkerSettings {
  const { sync } = config;
  return {
    redisUrl: config.redisUrl,
    queuePrefix: config.queuePrefix,
    run: runSettingsOf(config),
    concurrency: sync.concurrency,
    backgroundConcurrency: sync.backgroundConcurrency,
    jobLockMs: sync.jobLockMs,
    backoffBaseMs: sync.backoffBaseMs,
    backoffMaxMs: sync.backoffMaxMs,
    sweepEveryMs: sync.sweepEveryMs,
    stuckAfterMs: sync.stuckAfterMs,
    shutdownGraceMs: sync.shutdownGraceMs,
    eventsRetentionMs: sync.eventsRetentionMs,
  };
}

/** The state machine's settings. */
function runSettingsOf(config: Source): SyncSettings {
  return {
    leaseMs: config.sync.leaseMs,
    settleMs: config.sync.settleMs,
    requestTimeoutMs: Math.max(...config.accounts.map((account) => account.classroom.timeoutMs)),
    readLagMs: config.sync.readLagMs,
    throttlePauseMs: config.classroom.throttlePauseMs,
    nameRules: { minCut: config.classroom.nameMinCut },
    archiveOnCancel: config.sync.archiveOnCancel,
  };
}

// What reconciliation is told by the configuration: the one file of src/reconcile that reads a
// `Config` (lint's `config-through-settings`). src/runtime builds it once; the `reconcile` command
// and tests that run a pass by hand take its options from `reconcileOptionsOf`.
import type { Config } from '../config/config.ts';
import type { ReconcileOptions } from './run.ts';

/** A pass's options that come from the configuration (a caller adds its trigger, link checks, hooks). */
export type ConfiguredOptions = Pick<
  ReconcileOptions,
  'defaultInstituteId' | 'configuredInstituteIds' | 'stuckAfterMs' | 'nameRules' | 'repairNames' | 'archiveOnCancel'
>;

export interface ReconcileSettings {
  redisUrl: string;
  /** The queues' prefix: the reconcile queue lives under it, and listings are shared under it. */
  queuePrefix: string;
  /** RECONCILE_EVERY: milliseconds between scheduled passes (0: none). */
  everyMs: number;
  pass: ConfiguredOptions;
}

type Source = Pick<Config, 'queuePrefix' | 'redisUrl' | 'sync' | 'classroom' | 'accounts'>;

export function reconcileSettingsOf(config: Source): ReconcileSettings {
  return { redisUrl: config.redisUrl, queuePrefix: config.queuePrefix, everyMs: config.sync.reconcileEveryMs, pass: reconcileOptionsOf(config) };
}

export function reconcileOptionsOf(config: Pick<Config, 'classroom' | 'accounts' | 'sync'>): ConfiguredOptions {
  return {
    defaultInstituteId: config.classroom.instituteId,
    configuredInstituteIds: config.accounts.flatMap((account) => account.instituteIds),
    stuckAfterMs: config.sync.stuckAfterMs,
    nameRules: { minCut: config.classroom.nameMinCut },
    repairNames: config.sync.repairNames,
    archiveOnCancel: config.sync.archiveOnCancel,
  };
}

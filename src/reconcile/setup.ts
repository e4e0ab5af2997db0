// What a pass needs from a runtime and its configuration: the one place they are put together
// (the scheduled job, the `reconcile` command, tests and the benchmark all start here).
import type { Config } from '../config/config.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { clientsOf } from './accounts.ts';
import type { ReconcileDeps, ReconcileOptions } from './run.ts';

/** Fresh for each pass: the accounts' breakers are read once per pass. */
export function reconcileDepsOf(runtime: Pick<Runtime, 'database' | 'remotes' | 'queue' | 'logger'>, logger = runtime.logger): ReconcileDeps {
  return { db: runtime.database.db, clientFor: clientsOf(runtime.remotes), queue: runtime.queue, logger };
}

export function reconcileOptionsOf(config: Pick<Config, 'classroom' | 'accounts' | 'sync'>) {
  return {
    defaultInstituteId: config.classroom.instituteId,
    configuredInstituteIds: config.accounts.flatMap((account) => account.instituteIds),
    stuckAfterMs: config.sync.stuckAfterMs,
    nameRules: { minCut: config.classroom.nameMinCut },
    repairNames: config.sync.repairNames,
    archiveOnCancel: config.sync.archiveOnCancel,
  } satisfies Partial<ReconcileOptions>;
}

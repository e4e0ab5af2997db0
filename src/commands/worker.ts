// `classroom-sync worker`: migrations, then sync jobs until a signal; drains before exiting 0.
import type { Config } from '../config.ts';
import { runMigrations } from '../db/migrate.ts';
import { createRuntime } from '../runtime.ts';
import { createSyncWorker } from '../sync/worker.ts';

export async function startWorkerProcess(config: Config): Promise<void> {
  await runMigrations(config.databaseUrl);
  const runtime = createRuntime(config);
  const sync = createSyncWorker(runtime);
  runtime.logger.info(
    { workerId: runtime.workerId, concurrency: config.sync.concurrency, queuePrefix: config.queuePrefix, remote: config.classroom.baseUrl },
    'worker started',
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      runtime.logger.info({ signal }, 'stopping: no new jobs; finishing active ones');
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      sync
        .close()
        .then(() => runtime.close())
        .then(resolve, (error) => {
          runtime.logger.error({ err: error }, 'error while stopping');
          resolve();
        });
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  runtime.logger.info('worker stopped');
}

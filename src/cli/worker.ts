// `classroom-sync worker`: runs until SIGTERM/SIGINT; see src/commands/worker.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';

export function registerWorkerCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('worker')
    .description('run sync jobs and serve the API, dashboard, /metrics and probes on PORT until SIGTERM/SIGINT (drains, then exits 0)')
    .option('--metrics-auth', 'require API_TOKEN on /metrics too (default: /metrics is open, like most exporters)')
    .action(async (opts: { metricsAuth?: boolean }) => {
      const { startWorkerProcess } = await import('../commands/worker.ts');
      await startWorkerProcess(getConfig(), { metricsAuth: opts.metricsAuth === true });
    });
}

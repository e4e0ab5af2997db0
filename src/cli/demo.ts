// `classroom-sync demo` (and `npm start`): the whole product against the built-in sandbox; see src/commands/demo.ts.
import type { Command } from 'commander';
import type { Config } from '../config/config.ts';
import { decimal, probability } from './parse.ts';

interface DemoFlags {
  once?: boolean;
  count: number;
  sandboxPort: number;
  port?: number;
  failRate: number;
}

export function registerDemoCommand(program: Command, getConfig: () => Config): Command {
  return program
    .command('demo')
    .description('run the whole product against the built-in sandbox with sample batches')
    .option('--once', 'exit when the sample batches are done instead of serving until Ctrl-C')
    .option('--count <n>', 'how many sample batches', decimal, 12)
    .option('--sandbox-port <port>', 'port of the built-in sandbox (0 = any free port)', decimal, 0)
    .option('--fail-rate <p>', 'inject faults into this share of remote calls (0..1), to watch retries and the duplicate guard', probability, 0)
    .option('--port <port>', 'port of the HTTP API, dashboard and metrics on 127.0.0.1 (default PORT; 0 = any free port)', decimal)
    .action(async (opts: DemoFlags) => {
      const { runDemo } = await import('../commands/demo.ts');
      process.exitCode = await runDemo(getConfig(), {
        once: opts.once === true,
        count: opts.count,
        sandboxPort: opts.sandboxPort,
        ...(opts.port === undefined ? {} : { port: opts.port }),
        failRate: opts.failRate,
        // The global --verbose: the demo then logs at LOG_LEVEL instead of errors only.
        verbose: program.opts<{ verbose?: boolean }>().verbose === true,
      });
    });
}

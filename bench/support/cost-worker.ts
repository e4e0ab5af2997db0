// bench:cost's worker process: `startWorker` (what `classroom-sync worker` runs), answering
// 'usage', 'profile-start', 'profile-stop' and 'stop' over IPC. With --tracing it starts tracing
// first, as src/cli/main.ts does (OTEL_* from its environment): nothing of the application may be
// imported before that, or pg and ioredis would not be instrumented, so every import below that
// touches the application is dynamic.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { startTracing } from '../../src/telemetry/start.ts';
import { usage } from './usage.ts';

const stopTracing = process.argv.includes('--tracing') ? await startTracing(process.env) : undefined;
if (process.argv.includes('--tracing') && !stopTracing) throw new Error('--tracing: the OTEL_* variables did not turn tracing on');
const { countStatements } = await import('./statements.ts');
const statements = countStatements();
const { argValue } = await import('./scratch.ts');
const profile = argValue('--profile');
const { loadConfig } = await import('../../src/config/config.ts');
const { startWorker } = await import('../../src/commands/worker.ts');
const worker = await startWorker(loadConfig(process.env));
// The profile covers batches synced after the measured ones (`profile-start` to `profile-stop`).
const session = profile ? new Session() : undefined;
session?.connect();
process.on('message', (m) => {
  if (m === 'usage') process.send!({ ...usage(), statements: statements() });
  if (m === 'profile-start' && session) {
    void session
      .post('Profiler.enable')
      .then(() => session.post('Profiler.start'))
      .then(() => process.send!('profiling'));
  }
  if (m === 'profile-stop' && session) {
    void session
      .post('Profiler.stop')
      .then(({ profile: p }) => writeFileSync(profile!, JSON.stringify(p)))
      .then(() => process.send!('profiled'));
  }
  if (m === 'stop') {
    void worker
      .stop()
      .then(() => stopTracing?.())
      .then(() => process.exit(0));
  }
});
process.send!('ready');

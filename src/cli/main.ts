#!/usr/bin/env node
// The `classroom-sync` command: package.json's "bin", run by plain `node` from dist/. It only
// loads the CLI (./index.ts), so that what must be in place before the rest is imported can be
// set up here first: tracing, when the OTEL_* variables (the environment's or .env's) ask for it
// (src/telemetry; ioredis is patched only if imported after that).
import { loadDotEnv } from './dotenv.ts';
import { startTracing } from '../telemetry/start.ts';

const stopTracing = await startTracing(envWithDotEnv());
const { main } = await import('./index.ts');
if (stopTracing) {
  const { inCommandSpan } = await import('../telemetry/command-span.ts');
  await inCommandSpan(process.argv, () => main(process.argv));
  // Flushes what is still buffered: a short command ends long before the next scheduled export.
  await stopTracing().catch((error: unknown) => console.error(`classroom-sync: could not export the last traces: ${String(error)}`));
} else {
  await main(process.argv);
}

/** The environment with .env's lines; a .env that cannot be read is reported by main() itself. */
function envWithDotEnv(): NodeJS.ProcessEnv {
  try {
    loadDotEnv();
  } catch {
    // main() loads it again and explains the problem; without it, no tracing.
  }
  return process.env;
}

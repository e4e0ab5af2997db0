#!/usr/bin/env node
// The `classroom-sync` command: package.json's "bin", run by plain `node` from dist/. It only
// loads the CLI (./index.ts), so that what must be in place before the rest is imported can be
// set up here first: tracing, when the OTEL_* variables (the environment's or .env's) ask for it
// (src/telemetry; ioredis is patched only if imported after that).
import { loadDotEnv } from './dotenv.ts';
import { startTracing } from '../telemetry/start.ts';

const dotEnv = readDotEnvOnce();
const stopTracing = await startTracing(process.env);
const { main } = await import('./index.ts');
if (stopTracing) {
  const { inCommandSpan } = await import('../telemetry/command-span.ts');
  await inCommandSpan(process.argv, () => main(process.argv, dotEnv));
  // Flushes what is still buffered: a short command ends long before the next scheduled export.
  await stopTracing().catch((error: unknown) => console.error(`classroom-sync: could not export the last traces: ${String(error)}`));
} else {
  await main(process.argv, dotEnv);
}

/**
 * Loads `.env` into the environment now (tracing reads its OTEL_* lines) and hands main() the
 * outcome: the file's path, or the error main() reports like any other (without it, no tracing).
 */
function readDotEnvOnce(): () => string | undefined {
  try {
    const file = loadDotEnv();
    return () => file;
  } catch (error) {
    return () => {
      throw error;
    };
  }
}

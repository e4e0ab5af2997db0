// `.env` in the working directory, read before anything else: the entry (src/cli/main.ts) needs its
// OTEL_* lines to decide whether to trace before the CLI is even imported, and the CLI its settings.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from './errors.ts';

/**
 * Loads `.env` from the working directory, if there is one. Variables already in the environment
 * win, so a deployment can override any line of it (and loading it twice changes nothing). Returns
 * the file's path when it was loaded.
 */
export function loadDotEnv(cwd = process.cwd()): string | undefined {
  const file = resolve(cwd, '.env');
  if (!existsSync(file)) return undefined;
  if (typeof process.loadEnvFile !== 'function') {
    throw new UsageError(
      `${file} exists, but Node.js ${process.version} cannot read .env files (20.12 or later can): upgrade Node.js, or export the variables instead.`,
    );
  }
  process.loadEnvFile(file);
  return file;
}

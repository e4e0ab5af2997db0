import { readFileSync } from 'node:fs';

let version: string | undefined;

/** The version in package.json, read once (the CLI's `--version`, the webhooks' user-agent). */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return version;
}

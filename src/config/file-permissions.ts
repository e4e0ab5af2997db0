// Files of secrets (the accounts file, the API clients file) should be readable by their owner only.
// A check, not a refusal: a deployment may have reasons (a group the service runs in), so the
// operator is told once, at start-up and by `check`, with the command that fixes it.
import { statSync } from 'node:fs';

const GROUP = 0o070;
const OTHERS = 0o007;
const READ = 0o044;
const WRITE = 0o022;

/**
 * A warning sentence when users other than the owner may read or change `path` (mode & 0o077),
 * naming who and what, and the fix; undefined when only its owner may, or when it cannot be read
 * (reading it says why) or the platform has no such modes (Windows).
 */
export function looseFilePermissions(path: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return undefined;
  }
  const loose = mode & (GROUP | OTHERS);
  if (loose === 0) return undefined;
  const who = [loose & GROUP ? 'its group' : undefined, loose & OTHERS ? 'other users' : undefined].filter(Boolean).join(' and ');
  const what = [loose & READ ? 'read' : undefined, loose & WRITE ? 'changed' : undefined].filter(Boolean).join(' and ') || 'executed';
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return `${path} can be ${what} by ${who} (mode ${octal}), and it holds secrets: run \`chmod 600 ${path}\` so only its owner can read it`;
}

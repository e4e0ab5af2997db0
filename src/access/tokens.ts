// API tokens: how they are compared, and which values are refused.
import { createHash } from 'node:crypto';

export const MIN_TOKEN_LENGTH = 32;

/**
 * The API_TOKEN line .env.example showed until tokens needed 32 characters; the docs now show no
 * token a reader could copy. Someone who copied it was never going to keep it secret, and everyone
 * who read the example knows it.
 */
export const PLACEHOLDER_TOKENS: readonly string[] = Object.freeze(['change-me-to-a-long-random-string']);

const PLACEHOLDER_DIGESTS = new Set(PLACEHOLDER_TOKENS.map(tokenDigest));

/** Lower-case hex SHA-256: what a client's token is looked up by (`tokenSha256` in the clients file). */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function isPlaceholderDigest(digest: string): boolean {
  return PLACEHOLDER_DIGESTS.has(digest.toLowerCase());
}

/** Why a token is refused, or undefined; never repeats the token. */
export function tokenProblem(token: string): string | undefined {
  if (token.length < MIN_TOKEN_LENGTH) return `must be at least ${MIN_TOKEN_LENGTH} characters (e.g. \`openssl rand -hex 32\`)`;
  if (/\s/.test(token)) return 'must not contain spaces or line breaks';
  if (isPlaceholderDigest(tokenDigest(token))) return 'is the placeholder from the documentation; generate one with `openssl rand -hex 32`';
  return undefined;
}

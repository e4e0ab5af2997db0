import type { WebhookEndpoint } from './settings.ts';

/** What routing needs of an account: which institutes it serves and its own endpoint, if any. */
export interface RoutedAccount {
  readonly instituteIds: readonly string[];
  readonly anyInstitute?: boolean | undefined;
  readonly webhook?: WebhookEndpoint | undefined;
}

/**
 * An institute's messages go to its account's endpoint, or else to WEBHOOK_URL; with neither, they
 * are not sent (recorded as skipped).
 */
export function endpointRouter(
  accounts: readonly RoutedAccount[],
  fallback: WebhookEndpoint | undefined,
): (instituteId: string) => WebhookEndpoint | undefined {
  const byInstitute = new Map<string, WebhookEndpoint | undefined>();
  for (const account of accounts) for (const id of account.instituteIds) byInstitute.set(id, account.webhook ?? fallback);
  const anyInstitute = accounts.find((account) => account.anyInstitute);
  const otherwise = anyInstitute ? (anyInstitute.webhook ?? fallback) : fallback;
  return (instituteId) => (byInstitute.has(instituteId) ? byInstitute.get(instituteId) : otherwise);
}

/** Whether any institute has an endpoint (without one, no dispatcher needs to post anything). */
export function anyEndpoint(accounts: readonly RoutedAccount[], fallback: WebhookEndpoint | undefined): boolean {
  return fallback !== undefined || accounts.some((account) => account.webhook !== undefined);
}

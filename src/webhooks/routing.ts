import type { WebhookEndpoint } from './settings.ts';

/** What routing needs of an account: which institutes it serves and its own endpoint, if any. */
export interface RoutedAccount {
  readonly instituteIds: readonly string[];
  readonly anyInstitute?: boolean | undefined;
  readonly webhook?: WebhookEndpoint | undefined;
}

/**
 * An institute's messages go to its account's endpoint, or else to WEBHOOK_URL; with neither, this
 * worker does not send them (recorded as skipped when no worker of the fleet can: ./announce.ts).
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

/**
 * The institutes whose messages have an endpoint, or undefined when every institute's have (a
 * WEBHOOK_URL, or an endpoint on the account serving any institute): a dispatcher claims only these,
 * and tells the fleet so (./announce.ts). An account serves any institute only without an accounts
 * file, and then has no endpoint of its own: a listed institute always has its account's endpoint.
 */
export function routedInstitutes(accounts: readonly RoutedAccount[], fallback: WebhookEndpoint | undefined): string[] | undefined {
  if (fallback !== undefined || accounts.some((account) => account.anyInstitute && account.webhook)) return undefined;
  return accounts.filter((account) => account.webhook !== undefined).flatMap((account) => account.instituteIds);
}

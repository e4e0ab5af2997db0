import { type CredentialsBreaker, describeBreaker } from '../ratelimit/breaker.ts';

/**
 * A line for `status` while the remote refuses an account's API key; undefined while it accepts it.
 * `account` is named when the deployment has several.
 */
export async function refusedKeyLine(breaker: CredentialsBreaker, probeEveryMs: number, account?: string): Promise<string | undefined> {
  const state = await breaker.state();
  if (!state) return undefined;
  const probed = state.lastProbeAt ? `; last probe ${state.lastProbeAt.toISOString()}: ${state.lastProbe ?? 'refused'}` : '';
  const whose = account ? `account ${account}: ` : '';
  return `${whose}${describeBreaker(state)}: its batches wait, unchanged, using no attempt, while one worker probes the key every ${Math.round(probeEveryMs / 1000)} s${probed}; they resume by themselves once it works`;
}

// What one worker process does about an account's refused API key. The breaker itself lives in
// Redis (see ratelimit/breaker.ts); this watches it: while it is open the account's jobs go back to
// wait without touching PostgreSQL (and a process whose every account is refused takes no jobs at
// all), one process of the fleet at a time probes the remote with a harmless read every
// CLASSROOM_KEY_PROBE_EVERY, and when a probe succeeds (here or anywhere) every process resumes.
import { randomBytes } from 'node:crypto';
import type { ClassroomClient } from '../classroom/client.ts';
import { type ClassroomError, isClassroomError, isForbidden } from '../classroom/errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { CredentialsBreaker } from '../ratelimit/breaker.ts';

/** A 403 is about the key (every call is refused) or about this batch's institute or class. */
export type ForbiddenVerdict = 'key' | 'batch' | 'unknown';

export interface CredentialsGuard {
  /** A job saw the key refused (or the breaker open): hold the account's jobs back until it closes. */
  refused(): void;
  /** Whether this process knows the key to be refused now (no I/O: read before every job). */
  isRefused(): boolean;
  /** How soon a job of this account comes back while its key is refused. */
  retryInMs(): number;
  /** Asks the remote one harmless question to tell whether a 403 was about the key. */
  confirmForbidden(error: ClassroomError): Promise<ForbiddenVerdict>;
  close(): void;
}

export interface CredentialsGuardDeps {
  breaker: CredentialsBreaker;
  /** An unmetered client (accounts/clients.ts): the probe must pass the open breaker. */
  probeClient: ClassroomClient;
  instituteId: string;
  logger: Logger;
  probeEveryMs: number;
  /** Named in log lines when the deployment has several accounts. */
  account?: string | undefined;
  /** Told when this process learns the key is refused (true) or works again (false). */
  onChange?: ((refused: boolean) => void) | undefined;
  /** How often a paused process looks at the breaker (default 1 s). */
  watchEveryMs?: number;
}

type ProbeResult = { ok: true } | { ok: false; refused: boolean; status: number | undefined; message: string };

export function createCredentialsGuard(deps: CredentialsGuardDeps): CredentialsGuard {
  const probe = sharedProbe(deps.probeClient, deps.instituteId);
  const watch = createWatch(deps, probe);
  // Long enough that thousands of waiting jobs cost little, short enough to resume soon after a probe.
  const retryMs = Math.min(15_000, Math.max(1_000, deps.probeEveryMs / 2));
  return {
    refused: () => watch.start(),
    isRefused: () => watch.running(),
    retryInMs: () => Math.round(retryMs * (0.8 + Math.random() * 0.4)),
    confirmForbidden: (error) => confirmForbidden(deps, probe, error),
    close: () => watch.stop(),
  };
}

/**
 * A probe sent after the call: an answer to a read sent before a 403 says nothing about it (a key
 * refused a moment after the read worked would pass for a batch refused). Whoever asks while a probe
 * is out shares the next one, sent when that one ends, so jobs refused together cost two reads at most.
 */
function sharedProbe(client: ClassroomClient, instituteId: string): () => Promise<ProbeResult> {
  let out: Promise<ProbeResult> | undefined;
  let next: Promise<ProbeResult> | undefined;
  const send = () => {
    next = undefined;
    out = runProbe(client, instituteId);
    return out;
  };
  return () => {
    if (!out) return send();
    next ??= out.then(send, send);
    return next;
  };
}

/**
 * While this process is paused: every second, look at the breaker; when it is this process's turn,
 * probe; when the key works (here or anywhere in the fleet), close the breaker and resume.
 */
function createWatch(deps: CredentialsGuardDeps, probe: () => Promise<ProbeResult>): { start(): void; stop(): void; running(): boolean } {
  let timer: NodeJS.Timeout | undefined;
  let ticking = false;
  // A watch that cannot reach Redis or the remote says so once per streak, not every second.
  let failing = false;
  const stop = () => {
    clearInterval(timer);
    timer = undefined;
  };
  const resume = () => {
    stop();
    deps.onChange?.(false);
  };
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      if ((await probeOnce(deps, probe)) === 'works') resume();
      failing = false;
    } catch (error) {
      if (!failing) deps.logger.warn({ err: error }, 'credentials watch: could not read the breaker or probe the key; trying again every second');
      failing = true;
    } finally {
      ticking = false;
    }
  };
  return {
    start() {
      if (timer) return;
      timer = setInterval(() => void tick(), deps.watchEveryMs ?? 1_000);
      timer.unref();
      deps.onChange?.(true);
      void tick();
    },
    stop,
    running: () => timer !== undefined,
  };
}

/** One look at the breaker, and a probe if it is open and this process's turn. */
async function probeOnce(deps: CredentialsGuardDeps, probe: () => Promise<ProbeResult>): Promise<'works' | 'refused'> {
  const state = await deps.breaker.state();
  if (!state) return 'works';
  if (!(await deps.breaker.claimProbe(deps.probeEveryMs))) return 'refused';
  const result = await probe();
  if (!result.ok) {
    await deps.breaker.recordProbe(result);
    return 'refused';
  }
  if (await deps.breaker.close()) {
    const minutes = ((Date.now() - state.since.getTime()) / 60_000).toFixed(1);
    deps.logger.warn(
      { breaker: 'closed', account: deps.account },
      `the classroom service accepts the API key${ofAccount(deps)} again after ${minutes} min: workers resume`,
    );
  }
  return 'works';
}

/** A 403: the probe tells whether the key itself is refused (then the breaker opens) or only this batch. */
async function confirmForbidden(deps: CredentialsGuardDeps, probe: () => Promise<ProbeResult>, error: ClassroomError): Promise<ForbiddenVerdict> {
  const result = await probe();
  if (result.ok) return 'batch';
  if (!result.refused) return 'unknown';
  const opened = await deps.breaker.open({ status: error.httpStatus ?? error.bodyStatus, reason: error.message });
  if (opened) {
    deps.logger.error(
      { breaker: 'open', status: 403, account: deps.account },
      `the classroom service refuses the API key${ofAccount(deps)} (${error.message}; a harmless read was refused too): every worker stops calling it and one probes it periodically; its batches wait and use no attempt`,
    );
  }
  return 'key';
}

const ofAccount = (deps: CredentialsGuardDeps): string => (deps.account ? ` of account ${deps.account}` : '');

/** A listing filtered by a search term nothing matches: every credential and header, tiny answer. */
async function runProbe(client: ClassroomClient, instituteId: string): Promise<ProbeResult> {
  try {
    await client.listClasses(instituteId, { searchTerm: `classroom-sync-probe-${randomBytes(6).toString('hex')}` });
    return { ok: true };
  } catch (error) {
    if (!isClassroomError(error)) return { ok: false, refused: false, status: undefined, message: String(error) };
    const refused = error.kind === 'credentials_refused' || isForbidden(error);
    return { ok: false, refused, status: error.httpStatus ?? error.bodyStatus, message: error.message };
  }
}

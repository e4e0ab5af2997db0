// When "no class of this name is listed" may be believed after an add-class of unknown outcome.
// Believing it too soon makes a second class; believing it late only keeps a teacher waiting. So it
// is believed on evidence that the listing is fresh enough to show the class if it had been made,
// and, without any, only after READ_LAG_PATIENCE × SYNC_READ_LAG (docs/reliability.md, "Settling
// an unknown outcome", says why each kind of evidence is sound and where it is not):
//
// - the unknown add-class, if it made a class at all, made it by `endedAt + lateMs`: our client had
//   stopped waiting by `endedAt`, and a remote finishes (or drops) a request within one more
//   CLASSROOM_TIMEOUT of that;
// - measured_lag: the remote's read lag, measured from our own acknowledged writes (LagMonitor), is
//   far below the time that has passed since then, and a listing read in the window was seen that
//   fresh too (a listing may lag more than get-class does);
// - witness: the listing shows a class whose add-class was sent well after then, and leaves out no
//   acknowledged class older than the margin (so it is not a listing that lags as a whole);
// - patience: READ_LAG_PATIENCE × SYNC_READ_LAG have passed since the add-class could last have made
//   a class (`endedAt + lateMs`; without a known end, `sentAt` + twice `lateMs`): a remote that acts
//   on a request late must not find a second add-class already licensed.
import type { AcknowledgedCreate, MappingRow } from '../mapping/index.ts';
import * as mapping from '../mapping/index.ts';
import { LAG_WINDOW_MS, type LagEstimate } from './lag-monitor.ts';
import { READ_LAG_PATIENCE } from './read-lag.ts';
import type { SyncDeps } from './types.ts';

/** Samples the lag estimate needs before it counts: with fewer, a rare long lag may not be among them. */
export const MIN_LAG_SAMPLES = 20;
/** How many times the largest lag seen must have passed: a sample may have caught a lag half-way. */
export const LAG_FACTOR = 3;
/** Added to every lag bound: the clocks of a run, the database and the remote are not one clock. */
export const LAG_SLACK_MS = 500;
/** How often a listing is read again while no evidence is in (at least; it grows with the wait). */
const POLL_MIN_MS = 1_000;
const POLL_MAX_MS = 30_000;

export type SettleEvidence =
  | { by: 'measured_lag'; lagBoundMs: number; samples: number; sinceEndMs: number }
  | { by: 'witness'; witnessClassId: string; sentAfterEndMs: number; marginMs: number }
  | { by: 'patience'; sinceSentMs: number };

export type Settled = { believed: true; evidence: SettleEvidence } | { believed: false; retryInMs: number };

export interface SettleInput {
  /** When the listing read was sent (the database's clock, ms). */
  readAt: number;
  /** When the unknown add-class was sent (its `creating` write). */
  sentAt: number;
  /** When no add-class of this batch could be in flight any more; undefined when not known (then only patience). */
  endedAt: number | undefined;
  /** How long after `endedAt` the remote may still act on the request: CLASSROOM_TIMEOUT. */
  lateMs: number;
  readLagMs: number;
  /** The `_id`s the listing holds, in any of its lists. */
  listed: ReadonlySet<string>;
  /** The institute's acknowledged creates of the last LAG_WINDOW_MS, newest first. */
  acks: readonly AcknowledgedCreate[];
  /** The lag measured from our own writes (none: no such evidence). */
  measured: LagEstimate | undefined;
}

type ListingView = Pick<SettleInput, 'readAt' | 'listed' | 'acks'>;

/** How long the listing just read lags at least: the oldest acknowledged class it leaves out. */
export function listingLagsAtLeast(input: ListingView): number {
  let lagMs = 0;
  for (const ack of input.acks) if (!input.listed.has(ack.classId)) lagMs = Math.max(lagMs, input.readAt - ack.ackedAt.getTime());
  return lagMs;
}

/** How fresh the listing just read is at least: the time since the add-class of the newest class it shows was sent. */
export function listingFreshWithin(input: ListingView): number | undefined {
  let freshMs: number | undefined;
  for (const ack of input.acks) {
    if (input.listed.has(ack.classId)) freshMs = Math.min(freshMs ?? Number.POSITIVE_INFINITY, input.readAt - ack.sentAt.getTime());
  }
  return freshMs;
}

/** The lag bound measured samples allow (LAG_FACTOR × the largest + slack), or undefined while they are too few. */
export function measuredBound(measured: LagEstimate | undefined, staleMs = 0): number | undefined {
  if (!measured || measured.samples < MIN_LAG_SAMPLES) return undefined;
  return LAG_FACTOR * Math.max(measured.maxMs, staleMs) + LAG_SLACK_MS;
}

export function settleNotListed(input: SettleInput): Settled {
  const { readAt, sentAt, endedAt, lateMs, readLagMs, measured } = input;
  const patienceAt = (endedAt ?? sentAt + lateMs) + lateMs + READ_LAG_PATIENCE * readLagMs;
  const staleMs = listingLagsAtLeast(input);
  const lagBoundMs = measuredBound(measured, staleMs);
  // Read samples say how soon get-class shows a write; a listing must have been seen that fresh too.
  const listingConfirmed = lagBoundMs !== undefined && measured?.listingFreshMs !== undefined && measured.listingFreshMs <= lagBoundMs;
  let evidenceAt = patienceAt;
  if (endedAt !== undefined) {
    const doneBy = endedAt + lateMs;
    if (lagBoundMs !== undefined && listingConfirmed) {
      if (readAt >= doneBy + lagBoundMs) {
        return { believed: true, evidence: { by: 'measured_lag', lagBoundMs, samples: measured?.samples ?? 0, sinceEndMs: readAt - endedAt } };
      }
      evidenceAt = Math.min(evidenceAt, doneBy + lagBoundMs);
    }
    const marginMs = Math.max(readLagMs, lagBoundMs ?? 0);
    if (staleMs <= marginMs) {
      const witness = input.acks.find((ack) => input.listed.has(ack.classId) && ack.sentAt.getTime() >= doneBy + marginMs);
      if (witness) {
        const sentAfterEndMs = witness.sentAt.getTime() - endedAt;
        return { believed: true, evidence: { by: 'witness', witnessClassId: witness.classId, sentAfterEndMs, marginMs } };
      }
    }
  }
  if (readAt >= patienceAt) return { believed: true, evidence: { by: 'patience', sinceSentMs: readAt - sentAt } };
  // A listing seen leaving out a class acknowledged `staleMs` ago is unlikely to show one sent at
  // `sentAt` before `sentAt + staleMs`: reading it sooner would cost a call to find nothing new.
  const poll = Math.max(sentAt + staleMs - readAt, Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, (readAt - (endedAt ?? sentAt)) / 2)));
  return { believed: false, retryInMs: Math.max(50, Math.min(evidenceAt - readAt + 50, poll)) };
}

/**
 * What a listing read at `readAt` (the database's clock) says of the remote's lag, recorded in the
 * account's monitor: the institute's acknowledged creates it leaves out are lag samples, and the
 * newest one it shows says how fresh it is. Returns those creates (the evidence `settleNotListed` weighs).
 */
export async function observeListing(deps: SyncDeps, instituteId: string, readAt: number, listed: ReadonlySet<string>): Promise<AcknowledgedCreate[]> {
  const acks = await mapping.acknowledgedCreates(deps.db, instituteId, LAG_WINDOW_MS);
  const monitor = deps.lagMonitor;
  if (!monitor) return acks;
  const staleMs = listingLagsAtLeast({ readAt, listed, acks });
  if (staleMs > 0) await monitor.record(staleMs, 'listing');
  const freshMs = listingFreshWithin({ readAt, listed, acks });
  if (freshMs !== undefined) await monitor.record(freshMs, 'listing_fresh');
  return acks;
}

/** `settleNotListed` for `row`, whose listing was read at `readAt` with `acks` (from `observeListing`). */
export async function settleRow(
  deps: SyncDeps,
  row: MappingRow,
  readAt: number,
  listed: ReadonlySet<string>,
  acks: readonly AcknowledgedCreate[],
): Promise<Settled> {
  if (!row.createSentAt) return { believed: true, evidence: { by: 'patience', sinceSentMs: 0 } };
  return settleNotListed({
    readAt,
    sentAt: row.createSentAt.getTime(),
    endedAt: row.createEndedAt?.getTime(),
    lateMs: deps.settings.requestTimeoutMs,
    readLagMs: deps.settings.readLagMs,
    listed,
    acks,
    measured: await deps.lagMonitor?.estimate(),
  });
}

// The fault suite's lease audit (invariant 3: no remote call without a live lease). The sandbox runs
// in the suite's process and tells it of every call as it arrives; for each add-class, edit-class and
// get-class the suite notes the batch it is about (add-class carries `chaosRef`, the batch id; the
// others name a class, which carries it) and when it arrived (epoch ms; the workers, PostgreSQL and
// the sandbox share this machine's clock).
//
// What lease the batch's row held at that instant is read afterwards from a log kept by a trigger the
// suite adds to its own database (never part of the product's schema): every change of a row's lease
// epoch or expiry, stamped with `clock_timestamp()` inside the statement that made it. A change is
// stamped before its commit, and a worker sends a call only after its lease write committed, so the
// newest entry stamped before a call's arrival is the lease the row showed when the call arrived. A
// call is a violation when that lease had already ended (expired, released or fenced off): its margin
// is how long before the arrival it ended (negative). Lease ends stamped within a few milliseconds of
// an arrival are within the trigger's own window (stamp before commit), and the report shows each
// violation's margin so that such a case can be told from a real one.
//
// The arrival is when the sandbox read the request, not when the worker sent it: on a loaded machine
// the two can be a second apart. A call the worker sent under a live lease and gave up on (its client
// timed out, recorded as outcome_unknown) may be read after the lease was let go; that is the
// in-flight case the product plans for (it settles the outcome by reading, never by assuming the call
// did nothing), not a call sent without a lease. Such an arrival is reported apart (`lateArrivals`)
// when the batch's audit trail holds that call: same operation, outcome_unknown, sent (its recorded end
// minus its duration) under a live lease and no later than the arrival, and not already the sending
// of an earlier arrival. One chaos run in CI met it: an add-class sent 1 s into its lease, timed out
// at 1 s, and read by the sandbox 4 ms after the release that followed the timeout.
import pg from 'pg';
import type { RunningSandbox, SandboxOperation } from '../../src/sandbox/index.ts';

/** One call that arrived without a live lease on its batch's row. */
export interface LeaseViolation {
  batchId: string;
  operation: SandboxOperation;
  arrivedAt: string;
  /** The lease's end minus the arrival, in ms (≤ 0): how long before the call its lease had ended. */
  marginMs: number;
  /** The lease epoch the row showed at arrival (null: no row change logged before it). */
  epoch: number | null;
  /** `released`: no lease at all (released, fenced off, never taken); `expired`: it had run out. */
  lease: 'released' | 'expired' | 'never';
  /**
   * What the batch's row and audit trail show from 10 s before the arrival to 5 s after, oldest
   * first: each lease change and each audit event (a call, with its outcome, duration and worker; a
   * transition). Enough to tell a call sent late from one stamped late.
   */
  around: string[];
}

export interface LeaseAuditReport {
  /** Calls checked, per operation. */
  checked: Record<string, number>;
  /** Calls whose batch could not be told (a class id no batch's class carries). */
  unattributed: number;
  violations: LeaseViolation[];
  /** Calls read after their lease ended but sent under it and left unanswered (see the top of this file). */
  lateArrivals: LeaseViolation[];
  /** The smallest margin (lease end − arrival) of any call, in ms; null when none was checked. */
  minMarginMs: number | null;
  /** Calls that arrived with less than 250 ms of lease left (the product's local guard), violations included. */
  underGuard: number;
}

const AUDITED: ReadonlySet<SandboxOperation> = new Set(['addClass', 'editClass', 'getClass']);

/** The log table and its trigger, on the suite's private database (after the product's migrations). */
const INSTALL = `
create table if not exists chaos_lease_log (
  id bigserial primary key, batch_id text not null, at timestamptz not null default clock_timestamp(),
  epoch integer not null, expires_at timestamptz);
create index if not exists chaos_lease_log_batch on chaos_lease_log (batch_id, at);
create or replace function chaos_lease_logged() returns trigger language plpgsql as $$
begin
  if TG_OP = 'INSERT' or NEW.lease_epoch is distinct from OLD.lease_epoch or NEW.lease_expires_at is distinct from OLD.lease_expires_at then
    insert into chaos_lease_log (batch_id, epoch, expires_at) values (NEW.batch_id, NEW.lease_epoch, NEW.lease_expires_at);
  end if;
  return null;
end $$;
drop trigger if exists chaos_lease_logged on batch_classes;
create trigger chaos_lease_logged after insert or update on batch_classes for each row execute function chaos_lease_logged();`;

interface Arrival {
  operation: SandboxOperation;
  batchId: string;
  at: number;
}

interface LeaseEntry {
  at: number;
  epoch: number;
  expiresAt: number | null;
}

export class LeaseAuditor {
  private readonly arrivals: Arrival[] = [];
  private readonly refOfClass = new Map<string, string>();
  private unattributed = 0;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly sandbox: RunningSandbox) {}

  /** Adds the log and its trigger to the database at `databaseUrl`. */
  static async install(databaseUrl: string): Promise<void> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query(INSTALL);
    } finally {
      await client.end();
    }
  }

  start(): void {
    this.unsubscribe = this.sandbox.onRequest((operation, request) => {
      if (!AUDITED.has(operation)) return;
      const at = Date.now();
      const batchId = operation === 'addClass' ? refOf((request.body as { chaosRef?: unknown } | null)?.chaosRef) : this.batchOfClass(request.classId);
      if (batchId === undefined) this.unattributed += 1;
      else this.arrivals.push({ operation, batchId, at });
    });
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /** The suite is about to delete a class on the remote: calls naming it later are still its batch's. */
  remember(classId: string, batchId: string): void {
    this.refOfClass.set(classId, batchId);
  }

  /** Reads the lease log (PostgreSQL must be up) and checks every call noted. */
  async report(pool: pg.Pool): Promise<LeaseAuditReport> {
    const log = await readLog(pool);
    const checked: Record<string, number> = {};
    const violations: LeaseViolation[] = [];
    const lateArrivals: LeaseViolation[] = [];
    const sendings = new Sendings(pool, log);
    let minMarginMs: number | null = null;
    let underGuard = 0;
    for (const arrival of this.arrivals) {
      checked[arrival.operation] = (checked[arrival.operation] ?? 0) + 1;
      const lease = leaseAt(log.get(arrival.batchId) ?? [], arrival.at);
      const margin = lease?.expiresAt == null ? marginWithout(lease, arrival.at) : lease.expiresAt - arrival.at;
      minMarginMs = minMarginMs === null ? margin : Math.min(minMarginMs, margin);
      if (margin < 250) underGuard += 1;
      if (margin > 0) continue;
      const late = await sendings.unansweredUnderLease(arrival, this.arrivals);
      (late ? lateArrivals : violations).push({
        batchId: arrival.batchId,
        operation: arrival.operation,
        arrivedAt: new Date(arrival.at).toISOString(),
        marginMs: margin,
        epoch: lease?.epoch ?? null,
        lease: lease === undefined ? 'never' : lease.expiresAt === null ? 'released' : 'expired',
        around: await historyAround(pool, arrival.batchId, log.get(arrival.batchId) ?? [], arrival.at),
      });
    }
    return { checked, unattributed: this.unattributed, violations, lateArrivals, minMarginMs, underGuard };
  }

  private batchOfClass(classId: string | undefined): string | undefined {
    if (classId === undefined) return undefined;
    const known = this.refOfClass.get(classId);
    if (known !== undefined) return known;
    const ref = refOf(this.sandbox.store.get(classId)?.extra.chaosRef);
    if (ref !== undefined) this.refOfClass.set(classId, ref);
    return ref;
  }
}

/** The batches' unanswered calls as the audit trail recorded them, each the sending of at most one arrival. */
class Sendings {
  private readonly used = new Set<string>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: Map<string, LeaseEntry[]>,
  ) {}

  /** Whether `arrival` is the late reading of a call sent under a live lease and left unanswered. */
  async unansweredUnderLease(arrival: Arrival, arrivals: readonly Arrival[]): Promise<boolean> {
    const result = await this.pool.query<{ id: string; sent: string }>(
      `select e.id::text as id, (extract(epoch from e.at) * 1000 - e.duration_ms)::float8::text as sent
         from batch_events e join batch_classes b on b.id = e.batch_row_id
        where b.batch_id = $1 and e.type = 'remote_call' and e.operation = $2 and e.outcome = 'outcome_unknown' and e.duration_ms is not null
        order by e.at desc`,
      [arrival.batchId, arrival.operation],
    );
    const leases = this.log.get(arrival.batchId) ?? [];
    for (const call of result.rows) {
      const sent = Number(call.sent);
      if (sent > arrival.at + 1 || this.used.has(call.id)) continue;
      const lease = leaseAt(leases, sent);
      if (lease?.expiresAt == null || lease.expiresAt <= sent) return false;
      // An arrival of the same call between its sending and this one was its own: this one is another call.
      if (arrivals.some((a) => a !== arrival && a.batchId === arrival.batchId && a.operation === arrival.operation && a.at >= sent - 1 && a.at < arrival.at))
        return false;
      this.used.add(call.id);
      return true;
    }
    return false;
  }
}

const refOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** A call with no lease at all: its margin is how long before the arrival the lease was let go (or -Infinity, never taken). */
function marginWithout(lease: LeaseEntry | undefined, arrivedAt: number): number {
  return lease === undefined ? Number.NEGATIVE_INFINITY : lease.at - arrivedAt;
}

/**
 * The newest log entry stamped before the arrival (entries are in stamp order). An arrival is noted
 * in whole milliseconds (Date.now: the call came somewhere in [at, at + 1)), a stamp in microseconds:
 * an entry stamped within the arrival's own millisecond counts as before it. Without that, a call
 * sent right after its worker took the lease (stamped at 54.9143, the call noted at 54.914) was
 * judged against the lease before, released: four such calls failed two CI runs of the suite.
 */
function leaseAt(entries: readonly LeaseEntry[], at: number): LeaseEntry | undefined {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (entries[mid]!.at < at + 1) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? undefined : entries[lo - 1];
}

async function readLog(pool: pg.Pool): Promise<Map<string, LeaseEntry[]>> {
  const result = await pool.query<{ batch_id: string; at: string; epoch: number; expires_at: string | null }>(
    `select batch_id, (extract(epoch from at) * 1000)::float8::text as at, epoch,
            (extract(epoch from expires_at) * 1000)::float8::text as expires_at
       from chaos_lease_log order by batch_id, at, id`,
  );
  const log = new Map<string, LeaseEntry[]>();
  for (const row of result.rows) {
    const entries = log.get(row.batch_id) ?? [];
    entries.push({ at: Number(row.at), epoch: row.epoch, expiresAt: row.expires_at === null ? null : Number(row.expires_at) });
    log.set(row.batch_id, entries);
  }
  return log;
}

/** The batch's lease changes and audit events near `at` (see LeaseViolation.around). */
async function historyAround(pool: pg.Pool, batchId: string, leases: readonly LeaseEntry[], at: number): Promise<string[]> {
  const from = at - 10_000;
  const to = at + 5_000;
  const stamp = (ms: number) => `${new Date(ms).toISOString().slice(11, 23)} (${Math.round(ms - at)} ms)`;
  const lines = leases
    .filter((l) => l.at >= from && l.at <= to)
    .map((l) => ({ at: l.at, text: `lease epoch ${l.epoch} ${l.expiresAt === null ? 'released' : `until ${stamp(l.expiresAt)}`}` }));
  const events = await pool.query<{ at: string; text: string }>(
    `select (extract(epoch from e.at) * 1000)::float8::text as at,
            concat_ws(' ', e.type, e.from_state || '→' || e.to_state, e.operation, e.outcome, e.duration_ms || ' ms',
                      'attempt ' || e.attempt, e.worker_id, e.error) as text
       from batch_events e join batch_classes b on b.id = e.batch_row_id
      where b.batch_id = $1 and e.at between to_timestamp($2 / 1000.0) and to_timestamp($3 / 1000.0)`,
    [batchId, from, to],
  );
  for (const row of events.rows) lines.push({ at: Number(row.at), text: `event ${row.text}` });
  lines.push({ at, text: 'ARRIVAL of the call' });
  return lines.sort((a, b) => a.at - b.at).map((line) => `${stamp(line.at)} ${line.text}`);
}

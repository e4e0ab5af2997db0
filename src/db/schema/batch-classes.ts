// The mapping table: one row per (institute, batch). Postgres is the source of truth for every batch;
// Redis only holds the work still to do, and can be rebuilt from here.
import { sql } from 'drizzle-orm';
import { bigint, bigserial, index, integer, jsonb, pgEnum, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import type { Review, StoredEvent } from './stored.ts';

/**
 * pending      recorded, nothing sent yet (or a send is known not to have happened)
 * creating     an add-class POST may have been sent: its outcome must be resolved by reading, never by re-posting
 * created      the ClassID is stored
 * link_enabled edit-class enabled the public join link
 * synced       ClassID and join link stored (terminal)
 * failed       a permanent error or attempts exhausted (terminal; `retry` puts it back)
 * needs_review an ambiguous create that an operator must settle (terminal; evidence stored)
 * abandoned    an operator gave the batch up (`classroom-sync abandon`): never synced, reconciled or
 *              alerted on again; `abandon --undo` returns it to the state it was abandoned from (terminal)
 * cancelled    the integrator cancelled the batch: it never gets a class, or its class is archived
 *              (terminal; a later event with a higher version reopens it)
 */
export const BATCH_STATES = ['pending', 'creating', 'created', 'link_enabled', 'synced', 'failed', 'needs_review', 'abandoned', 'cancelled'] as const;
export type BatchState = (typeof BATCH_STATES)[number];
export const TERMINAL_STATES: readonly BatchState[] = ['synced', 'failed', 'needs_review', 'abandoned', 'cancelled'];

export const batchState = pgEnum('batch_state', BATCH_STATES);

/**
 * The lane a batch is stored in: where its job waits until its add-class is sent.
 * live         published as it happened (library, POST /v1/batches, enqueue)
 * operator     put back by an operator (retry) or by a reconciliation repair
 * backfill     history (import, enqueue --backfill): syncs when nothing else waits
 */
export const BATCH_LANES = ['live', 'operator', 'backfill'] as const;
export type BatchLane = (typeof BATCH_LANES)[number];

export const batchLane = pgEnum('batch_lane', BATCH_LANES);

/** A batch whose add-class was sent or done: its job waits in the `under_way` lane, whatever its stored lane. */
export const UNDER_WAY_STATES: readonly BatchState[] = ['creating', 'created', 'link_enabled'];

/**
 * The lanes of the queue and of the rate limit, in order of precedence: `under_way` (a batch in one of
 * UNDER_WAY_STATES; not a stored lane) ahead of all, then the stored lanes in their order.
 */
export const QUEUE_LANES = ['under_way', ...BATCH_LANES] as const;
export type QueueLane = (typeof QUEUE_LANES)[number];

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const batchClasses = pgTable(
  'batch_classes',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    instituteId: text('institute_id').notNull(),
    batchId: text('batch_id').notNull(),
    /** The class name sent on add-class (after the name template); what a listing search matches on. */
    className: text('class_name').notNull(),
    /**
     * The name the remote actually kept (from get-class, or the listing when a class was adopted):
     * it may be trimmed, re-cased, normalised or cut. Later comparisons use it instead of a guess.
     */
    remoteName: text('remote_name'),
    classId: text('class_id'),
    joinLink: text('join_link'),
    state: batchState('state').notNull().default('pending'),
    /** The lane its job waits in; kept here so a rebuilt queue puts it back in the same one. */
    lane: batchLane('lane').notNull().default('live'),
    /** When it entered its lane (intake, retry, repair): how long it has waited there. */
    laneSince: ts('lane_since').notNull().defaultNow(),
    /**
     * Its place in its institute's line in its lane while `pending` (src/mapping/record-received.ts):
     * one more than the last waiting one's when received. Its job's place is this minus the line of
     * the institute's first waiting batch, so intake never counts a line. Null once it leaves pending.
     */
    line: bigint('line', { mode: 'number' }),
    /**
     * The place its job was given in its lane when it was queued (0 first): a queue rebuilt after a
     * Redis wipe gives it the same one, so the jobs come back in the order they were in. Null once it
     * leaves pending, and for batches queued before 0012.
     */
    place: integer('place'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    lastErrorKind: text('last_error_kind'),
    /** The batch as the integrator last described it: the created event with every applied update. */
    event: jsonb('event').$type<StoredEvent>().notNull(),
    /** The integrator's `version` of the last event applied (null: none sent one); an event not above it is stale. */
    version: bigint('version', { mode: 'number' }),
    /** Counts the changes applied after creation (updates, cancellations, reopenings). */
    revision: integer('revision').notNull().default(0),
    /** The revision the remote class (or the create about to be sent) already reflects; below `revision`, an edit is due. */
    appliedRevision: integer('applied_revision').notNull().default(0),
    /** The name, subject and extra fields the remote class was last given (add-class or edit-class). */
    appliedEvent: jsonb('applied_event').$type<StoredEvent>(),
    /** The integrator's `version` of `applied_event` (null: none sent one): what `batch.updated` says was applied. */
    appliedVersion: bigint('applied_version', { mode: 'number' }),
    /** A new class name (the template applied to an update) not yet sent on edit-class; null when none waits. */
    nextClassName: text('next_class_name'),
    /** When the integrator cancelled the batch (null: wanted); cleared when a later event reopens it. */
    cancelledAt: ts('cancelled_at'),
    /** When we archived its class on the remote, or may have (a reopened batch's archive in doubt); null: not archived by us. */
    archivedAt: ts('archived_at'),
    /** Why an operator must look (needs_review), with what was seen. */
    review: jsonb('review').$type<Review>(),
    /** Fencing: every write by a runner carries the epoch it was granted; a newer epoch wins. */
    leaseOwner: text('lease_owner'),
    leaseEpoch: integer('lease_epoch').notNull().default(0),
    leaseExpiresAt: ts('lease_expires_at'),
    receivedAt: ts('received_at').notNull().defaultNow(),
    createSentAt: ts('create_sent_at'),
    /**
     * No add-class of this batch's last `creating` can still be in flight after this instant (the
     * database's clock): when its run saw the outcome unknown, or, for a run that died holding the
     * lease, that lease's end plus the request timeout. Null while a run holds a creating batch.
     */
    createEndedAt: ts('create_ended_at'),
    /**
     * No edit-class an earlier run of this batch sent can still take effect on the remote after this
     * instant (the database's clock): an edit whose outcome was unknown ended, plus CLASSROOM_TIMEOUT;
     * for a run that died holding the lease, its end plus twice that. The next edit waits for it, so
     * that a late one cannot undo a newer one. Null: none outstanding.
     */
    callsLandedBy: ts('calls_settled_at'),
    /** When an add-class of this batch was answered with its ClassID (null for an adopted class). */
    createAckedAt: ts('create_acked_at'),
    classCreatedAt: ts('class_created_at'),
    linkEnabledAt: ts('link_enabled_at'),
    syncedAt: ts('synced_at'),
    failedAt: ts('failed_at'),
    /** Set while abandoned: when, from which state (where `--undo` returns it), and the operator's reason. */
    abandonedAt: ts('abandoned_at'),
    abandonedFrom: batchState('abandoned_from'),
    abandonReason: text('abandon_reason'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('batch_classes_institute_batch_key').on(t.instituteId, t.batchId),
    uniqueIndex('batch_classes_class_id_key').on(t.classId).where(sql`${t.classId} is not null`),
    index('batch_classes_state_updated_idx').on(t.state, t.updatedAt),
    index('batch_classes_institute_class_name_idx').on(t.instituteId, t.className),
    // The sweep's way to batches at rest with a change still to apply (few, among every synced one).
    index('batch_classes_change_due_idx').on(t.id).where(sql`${t.revision} > ${t.appliedRevision}`),
    index('batch_classes_institute_acked_idx').on(t.instituteId, t.createAckedAt).where(sql`${t.createAckedAt} is not null`),
    // An institute's line in a lane: its first and last waiting batch, read by key at intake and by the sweep.
    index('batch_classes_waiting_line_idx').on(t.instituteId, t.lane, t.line).where(sql`${t.state} = 'pending'`),
    // The sweep's two tiers (src/mapping/find-stuck.ts), each paged by id: the rows of one never make it read the other's.
    index('batch_classes_ahead_idx')
      .on(t.id)
      .where(sql`${t.state} in ('creating', 'created', 'link_enabled') or (${t.state} = 'pending' and ${t.lane} <> 'backfill')`),
    index('batch_classes_backfill_idx').on(t.id).where(sql`${t.state} = 'pending' and ${t.lane} = 'backfill'`),
    // Waiting batches recorded before lines existed (or back in pending): what `migrate` numbers (src/db/backfills.ts).
    index('batch_classes_unlined_idx').on(t.id).where(sql`${t.state} = 'pending' and ${t.line} is null`),
    // What src/db/backfills.ts still has to fill (classes made before 0008): empty once it has run.
    index('batch_classes_unapplied_idx').on(t.id).where(sql`${t.appliedEvent} is null and (${t.classId} is not null or ${t.state} <> 'pending')`),
    // The oldest wait of each lane (src/mapping/lane-stats.ts): the first entry of an index, not a min() over the lane.
    // One per lane, the lane in the predicate, not a column: an index led by the lane would offer intake's
    // line-end probe an `lane = …` condition, and on a table not yet analyzed the planner took it and read the lane.
    ...BATCH_LANES.map((lane) =>
      index(`batch_classes_${lane}_wait_idx`)
        .on(t.laneSince)
        .where(sql`${t.state} = 'pending' and ${t.lane} = ${sql.raw(`'${lane}'`)}`),
    ),
    index('batch_classes_under_way_since_idx').on(t.laneSince).where(sql`${t.state} in ('creating', 'created', 'link_enabled')`),
    // A page of batches in a state, or of an institute in a state, in id order (src/mapping/list-batches.ts):
    // a rare state among a million synced rows reads its own rows only. The second also serves the
    // reconciliation's reads of an institute (batches-of-institute.ts).
    index('batch_classes_state_id_idx').on(t.state, t.id),
    index('batch_classes_institute_state_id_idx').on(t.instituteId, t.state, t.id),
  ],
);

export type BatchRow = typeof batchClasses.$inferSelect;
export type NewBatchRow = typeof batchClasses.$inferInsert;

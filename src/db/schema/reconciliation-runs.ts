// One row per reconciliation pass: when it ran, what it found per category, what it repaired, and
// why it failed if it did. Written at the start (so a crashed pass still shows) and at the end.
import { bigint, bigserial, boolean, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const reconciliationRuns = pgTable(
  'reconciliation_runs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** `schedule` (the BullMQ job scheduler), `cli` (`classroom-sync reconcile`), or a caller's own label. */
    trigger: text('trigger').notNull(),
    dryRun: boolean('dry_run').notNull().default(false),
    startedAt: ts('started_at').notNull().defaultNow(),
    /** null while running, or when the process died mid-pass. */
    finishedAt: ts('finished_at'),
    institutes: jsonb('institutes').$type<string[]>().notNull().default([]),
    /** Findings per category: in_sync, missing_remote, hidden_remote, orphan_remote, stuck, link_missing, duplicate_suspect, needs_review_resolved, name_drift, cancelled_visible. */
    counts: jsonb('counts').$type<Record<string, number>>().notNull().default({}),
    /** What was changed (counts, plus each adopted batch and its class); empty for a dry run. */
    repairs: jsonb('repairs').$type<Record<string, unknown>>().notNull().default({}),
    /** Every problem of the pass (an institute whose listing failed, a repair that failed); null when clean. */
    error: text('error'),
    /** batch_classes.id of the last synced class whose join link was checked; the next pass continues after it. */
    linkCheckCursor: bigint('link_check_cursor', { mode: 'number' }),
  },
  (t) => [index('reconciliation_runs_started_at_idx').on(t.startedAt)],
);

export type ReconciliationRunRow = typeof reconciliationRuns.$inferSelect;

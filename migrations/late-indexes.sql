-- Indexes on the tables that grow with the batches, built after the SQL migrations by `migrate`
-- (src/db/late-indexes.ts) CONCURRENTLY: a migration's CREATE INDEX runs in drizzle's transaction and
-- holds every write to its table until the last migration commits (6.9 s at 1,600,000 batches,
-- bench:scale); built concurrently, writers go on. Each is declared in src/db/schema as well (what
-- the queries and drizzle-kit know); a test checks that the two agree. One that a stopped build left
-- invalid is dropped and built again at the next `migrate`. Add new indexes on batch_classes,
-- batch_events and webhook_messages here, not in a migration.

-- migrations/0012_lines.sql
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_waiting_line_idx" ON "batch_classes" USING btree ("institute_id","lane","line") WHERE "batch_classes"."state" = 'pending';
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_ahead_idx" ON "batch_classes" USING btree ("id") WHERE "batch_classes"."state" in ('creating', 'created', 'link_enabled') or ("batch_classes"."state" = 'pending' and "batch_classes"."lane" <> 'backfill');
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_backfill_idx" ON "batch_classes" USING btree ("id") WHERE "batch_classes"."state" = 'pending' and "batch_classes"."lane" = 'backfill';
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_unlined_idx" ON "batch_classes" USING btree ("id") WHERE "batch_classes"."state" = 'pending' and "batch_classes"."line" is null;
--> statement-breakpoint

-- migrations/0013_counts.sql
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_live_wait_idx" ON "batch_classes" USING btree ("lane_since") WHERE "batch_classes"."state" = 'pending' and "batch_classes"."lane" = 'live';
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_operator_wait_idx" ON "batch_classes" USING btree ("lane_since") WHERE "batch_classes"."state" = 'pending' and "batch_classes"."lane" = 'operator';
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_backfill_wait_idx" ON "batch_classes" USING btree ("lane_since") WHERE "batch_classes"."state" = 'pending' and "batch_classes"."lane" = 'backfill';
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_under_way_since_idx" ON "batch_classes" USING btree ("lane_since") WHERE "batch_classes"."state" in ('creating', 'created', 'link_enabled');
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_unapplied_idx" ON "batch_classes" USING btree ("id") WHERE "batch_classes"."applied_event" is null and ("batch_classes"."class_id" is not null or "batch_classes"."state" <> 'pending');
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhook_messages_pending_age_idx" ON "webhook_messages" USING btree ("occurred_at") WHERE "webhook_messages"."status" = 'pending';
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_state_id_idx" ON "batch_classes" USING btree ("state","id");
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "batch_classes_institute_state_id_idx" ON "batch_classes" USING btree ("institute_id","state","id");
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhook_messages_settled_idx" ON "webhook_messages" USING btree ("occurred_at") WHERE "webhook_messages"."status" <> 'pending';

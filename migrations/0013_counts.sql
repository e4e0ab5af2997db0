-- Each delta has a primary key (id), as every table has: once a publication covers the tables (FOR ALL
-- TABLES: change data capture, a managed blue/green upgrade), PostgreSQL refuses a DELETE (the fold,
-- the truncate triggers) on a table with no replica identity.
CREATE TABLE "batch_counts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"institute_id" text NOT NULL,
	"state" "batch_state" NOT NULL,
	"lane" "batch_lane" NOT NULL,
	"n" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_message_counts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"n" bigint NOT NULL
);
--> statement-breakpoint
-- Reads sum the deltas from these (index-only): the heap keeps the pages a burst of deltas took.
CREATE INDEX "batch_counts_key_idx" ON "batch_counts" USING btree ("state","lane","institute_id","n");--> statement-breakpoint
CREATE INDEX "webhook_message_counts_key_idx" ON "webhook_message_counts" USING btree ("status","n");--> statement-breakpoint
-- This migration's indexes (each lane's oldest wait, pages by state and institute, pruning by age)
-- are built concurrently after it, by `migrate`: migrations/late-indexes.sql.
-- Counts kept as rows change (src/db/schema/counts.ts): each change appends a signed delta in the
-- same transaction; nothing updates a shared row, so writers never queue on a counter. A bulk
-- insert or delete adds one delta per key from its transition table; an update adds two (out of the
-- old key, into the new) only when institute, state or lane changed: the WHEN is checked without
-- calling the function, so a lease touch or a line number costs nothing here.
CREATE FUNCTION "batch_counts_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO batch_counts (institute_id, state, lane, n) SELECT institute_id, state, lane, count(*) FROM new_rows GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "batch_counts_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO batch_counts (institute_id, state, lane, n) SELECT institute_id, state, lane, -count(*) FROM old_rows GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "batch_counts_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO batch_counts (institute_id, state, lane, n) VALUES (OLD.institute_id, OLD.state, OLD.lane, -1), (NEW.institute_id, NEW.state, NEW.lane, 1);
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- A fold (src/mapping/count-by-state.ts: compactCounts) may be half done: it has deleted the deltas
-- and inserted their sum, not yet committed. A DELETE whose snapshot is older than that commit skips
-- the rows the fold deleted and never sees its sum, which would then count rows the TRUNCATE removed.
-- The lock (self-exclusive, held to commit) waits for that fold and keeps the next one out; the
-- DELETE, a statement of its own, then sees the fold's sum. TRUNCATE batch_counts would not do: it
-- fails when the same TRUNCATE names batch_counts too (the demo's reset empties every table).
CREATE FUNCTION "batch_counts_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE batch_counts IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM batch_counts;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "batch_classes_counts_inserted" AFTER INSERT ON "batch_classes" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "batch_counts_inserted"();--> statement-breakpoint
CREATE TRIGGER "batch_classes_counts_deleted" AFTER DELETE ON "batch_classes" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "batch_counts_deleted"();--> statement-breakpoint
CREATE TRIGGER "batch_classes_counts_moved" AFTER UPDATE ON "batch_classes" FOR EACH ROW
  WHEN ((OLD.institute_id, OLD.state, OLD.lane) IS DISTINCT FROM (NEW.institute_id, NEW.state, NEW.lane))
  EXECUTE FUNCTION "batch_counts_moved"();--> statement-breakpoint
CREATE TRIGGER "batch_classes_counts_truncated" AFTER TRUNCATE ON "batch_classes"
  FOR EACH STATEMENT EXECUTE FUNCTION "batch_counts_truncated"();--> statement-breakpoint
-- The rows already there, counted once. The triggers above hold off writers until this migration
-- commits, so no change falls between this count and the first delta.
INSERT INTO batch_counts (institute_id, state, lane, n) SELECT institute_id, state, lane, count(*) FROM batch_classes GROUP BY 1, 2, 3;
--> statement-breakpoint
CREATE FUNCTION "webhook_message_counts_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_message_counts (status, n) SELECT status, count(*) FROM new_rows GROUP BY 1;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "webhook_message_counts_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_message_counts (status, n) SELECT status, -count(*) FROM old_rows GROUP BY 1;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION "webhook_message_counts_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_message_counts (status, n) VALUES (OLD.status, -1), (NEW.status, 1);
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Locked first, as batch_counts_truncated does: a fold half done must not outlive the rows.
CREATE FUNCTION "webhook_message_counts_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE webhook_message_counts IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM webhook_message_counts;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "webhook_messages_counts_inserted" AFTER INSERT ON "webhook_messages" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "webhook_message_counts_inserted"();--> statement-breakpoint
CREATE TRIGGER "webhook_messages_counts_deleted" AFTER DELETE ON "webhook_messages" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "webhook_message_counts_deleted"();--> statement-breakpoint
CREATE TRIGGER "webhook_messages_counts_moved" AFTER UPDATE ON "webhook_messages" FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION "webhook_message_counts_moved"();--> statement-breakpoint
CREATE TRIGGER "webhook_messages_counts_truncated" AFTER TRUNCATE ON "webhook_messages"
  FOR EACH STATEMENT EXECUTE FUNCTION "webhook_message_counts_truncated"();--> statement-breakpoint
INSERT INTO webhook_message_counts (status, n) SELECT status, count(*) FROM webhook_messages GROUP BY 1;

-- Lines (src/mapping/record-received.ts): each waiting batch's place in its institute's line in its lane,
-- so that intake and the sweep place a job by reading two index entries instead of counting the line.
-- A nullable column with no default changes no row; the batches already waiting are numbered by
-- `migrate` afterwards, a few thousand rows per statement (src/db/backfills.ts), not here.
ALTER TABLE "batch_classes" ADD COLUMN "line" bigint;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "place" integer;--> statement-breakpoint
-- Its indexes (the lines' ends, the sweep's tiers, the unnumbered) are built concurrently after it,
-- by `migrate`: migrations/late-indexes.sql.
-- A line and a place mean something only while the batch waits: one that leaves pending lets go of them, so
-- a batch that comes back later (a retry, an undo, a known unsent create) never drags its
-- institute's first waiting line back to where it was long ago.
CREATE FUNCTION "batch_classes_leave_line"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.line := NULL;
  NEW.place := NULL;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "batch_classes_leave_line" BEFORE UPDATE OF state ON "batch_classes"
  FOR EACH ROW WHEN (OLD.state = 'pending' AND NEW.state <> 'pending' AND (OLD.line IS NOT NULL OR OLD.place IS NOT NULL))
  EXECUTE FUNCTION "batch_classes_leave_line"();

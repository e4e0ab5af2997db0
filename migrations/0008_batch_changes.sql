ALTER TYPE "public"."batch_state" ADD VALUE 'cancelled';--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "version" bigint;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "revision" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "applied_revision" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "applied_event" jsonb;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "next_class_name" text;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "cancelled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "archived_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "batch_classes_change_due_idx" ON "batch_classes" USING btree ("id") WHERE "batch_classes"."revision" > "batch_classes"."applied_revision";--> statement-breakpoint
-- The outbox's writer, as in 0007, with two more messages: batch.updated when an edit reached the
-- class of a synced batch, batch.cancelled when a batch ends cancelled. States are still compared
-- as text: the enum's new value cannot be used in the transaction that adds it.
CREATE OR REPLACE FUNCTION "webhook_message_of_batch"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  data jsonb := jsonb_build_object('instituteId', NEW.institute_id, 'batchId', NEW.batch_id, 'state', NEW.state);
  iso text := 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.state::text = 'abandoned' AND NEW.state::text <> 'abandoned' THEN
    kind := 'batch.abandon_undone';
    data := data || jsonb_build_object('classId', NEW.class_id);
  ELSIF TG_OP = 'UPDATE' AND NEW.state::text = 'synced' AND OLD.state::text = 'synced' AND NEW.applied_revision > OLD.applied_revision
        AND OLD.class_id IS NOT DISTINCT FROM NEW.class_id AND OLD.join_link IS NOT DISTINCT FROM NEW.join_link THEN
    kind := 'batch.updated';
    data := data || jsonb_build_object('classId', NEW.class_id, 'className', NEW.class_name, 'subject', NEW.event ->> 'subject',
      'version', NEW.version, 'updatedAt', to_char(now() AT TIME ZONE 'UTC', iso));
  ELSIF NEW.state::text = 'synced' THEN
    kind := 'batch.synced';
    data := data || jsonb_build_object('classId', NEW.class_id, 'joinLink', NEW.join_link,
      'syncedAt', to_char(coalesce(NEW.synced_at, now()) AT TIME ZONE 'UTC', iso));
  ELSIF NEW.state::text = 'failed' THEN
    kind := 'batch.failed';
    data := data || jsonb_build_object('errorKind', NEW.last_error_kind, 'error', NEW.last_error, 'attempts', NEW.attempts);
  ELSIF NEW.state::text = 'needs_review' THEN
    kind := 'batch.needs_review';
    data := data || jsonb_build_object(
      'reason', NEW.review ->> 'reason',
      'candidateIds', coalesce((SELECT jsonb_agg(c -> '_id') FROM jsonb_array_elements(NEW.review -> 'evidence' -> 'matches') c
                                 WHERE jsonb_typeof(c -> '_id') = 'string'), '[]'::jsonb));
  ELSIF NEW.state::text = 'abandoned' THEN
    kind := 'batch.abandoned';
    data := data || jsonb_build_object('abandonedFrom', NEW.abandoned_from, 'reason', NEW.abandon_reason, 'classId', NEW.class_id,
      'abandonedAt', to_char(coalesce(NEW.abandoned_at, now()) AT TIME ZONE 'UTC', iso));
  ELSIF NEW.state::text = 'cancelled' THEN
    kind := 'batch.cancelled';
    data := data || jsonb_build_object('classId', NEW.class_id, 'archived', NEW.archived_at IS NOT NULL, 'version', NEW.version,
      'cancelledAt', to_char(coalesce(NEW.cancelled_at, now()) AT TIME ZONE 'UTC', iso));
  ELSE
    RETURN NULL;
  END IF;
  INSERT INTO webhook_messages (message_id, batch_row_id, institute_id, batch_id, type, data)
    VALUES ('msg_' || replace(gen_random_uuid()::text, '-', ''), NEW.id, NEW.institute_id, NEW.batch_id, kind, data);
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER "batch_classes_webhook_messages_changed" ON "batch_classes";--> statement-breakpoint
CREATE TRIGGER "batch_classes_webhook_messages_changed" AFTER UPDATE OF state, class_id, join_link, applied_revision ON "batch_classes"
  FOR EACH ROW
  WHEN ((OLD.state IS DISTINCT FROM NEW.state AND (NEW.state::text IN ('synced', 'failed', 'needs_review', 'abandoned', 'cancelled') OR OLD.state::text = 'abandoned'))
     OR (NEW.state::text = 'synced' AND (OLD.class_id IS DISTINCT FROM NEW.class_id OR OLD.join_link IS DISTINCT FROM NEW.join_link))
     OR (NEW.state::text = 'synced' AND OLD.state::text = 'synced' AND NEW.applied_revision > OLD.applied_revision))
  EXECUTE FUNCTION "webhook_message_of_batch"();

CREATE TABLE "webhook_messages" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"message_id" text NOT NULL,
	"batch_row_id" bigint NOT NULL,
	"institute_id" text NOT NULL,
	"batch_id" text NOT NULL,
	"type" text NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL,
	"data" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"retry_from" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp with time zone,
	"last_attempt_at" timestamp with time zone,
	"last_status" integer,
	"last_error" text,
	"delivered_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD CONSTRAINT "webhook_messages_batch_row_id_batch_classes_id_fk" FOREIGN KEY ("batch_row_id") REFERENCES "public"."batch_classes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_messages_message_id_key" ON "webhook_messages" USING btree ("message_id");--> statement-breakpoint
CREATE INDEX "webhook_messages_due_idx" ON "webhook_messages" USING btree ("next_attempt_at","id") WHERE "webhook_messages"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_messages_batch_idx" ON "webhook_messages" USING btree ("batch_row_id","id");--> statement-breakpoint
CREATE INDEX "webhook_messages_pending_batch_idx" ON "webhook_messages" USING btree ("batch_row_id","id") WHERE "webhook_messages"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_messages_status_idx" ON "webhook_messages" USING btree ("status","id");--> statement-breakpoint
-- The outbox's writer: a message for every state change the integrator hears about, written in the
-- transaction of the change itself, whichever statement made it (a sync run, a reconciliation
-- repair, an operator's abandon or its undo). A synced batch whose class or join link changes in
-- place gets a new batch.synced. Times are ISO 8601 in UTC, as JavaScript writes them. The triggers'
-- WHEN clauses keep the function off every other write of a batch (its steps, its lease); they
-- compare states as text, since a fresh database adds the enum's values in this same transaction.
CREATE FUNCTION "webhook_message_of_batch"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  data jsonb := jsonb_build_object('instituteId', NEW.institute_id, 'batchId', NEW.batch_id, 'state', NEW.state);
  iso text := 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.state = 'abandoned' AND NEW.state <> 'abandoned' THEN
    kind := 'batch.abandon_undone';
    data := data || jsonb_build_object('classId', NEW.class_id);
  ELSIF NEW.state = 'synced' THEN
    kind := 'batch.synced';
    data := data || jsonb_build_object('classId', NEW.class_id, 'joinLink', NEW.join_link,
      'syncedAt', to_char(coalesce(NEW.synced_at, now()) AT TIME ZONE 'UTC', iso));
  ELSIF NEW.state = 'failed' THEN
    kind := 'batch.failed';
    data := data || jsonb_build_object('errorKind', NEW.last_error_kind, 'error', NEW.last_error, 'attempts', NEW.attempts);
  ELSIF NEW.state = 'needs_review' THEN
    kind := 'batch.needs_review';
    data := data || jsonb_build_object(
      'reason', NEW.review ->> 'reason',
      'candidateIds', coalesce((SELECT jsonb_agg(c -> '_id') FROM jsonb_array_elements(NEW.review -> 'evidence' -> 'matches') c
                                 WHERE jsonb_typeof(c -> '_id') = 'string'), '[]'::jsonb));
  ELSIF NEW.state = 'abandoned' THEN
    kind := 'batch.abandoned';
    data := data || jsonb_build_object('abandonedFrom', NEW.abandoned_from, 'reason', NEW.abandon_reason, 'classId', NEW.class_id,
      'abandonedAt', to_char(coalesce(NEW.abandoned_at, now()) AT TIME ZONE 'UTC', iso));
  ELSE
    RETURN NULL;
  END IF;
  INSERT INTO webhook_messages (message_id, batch_row_id, institute_id, batch_id, type, data)
    VALUES ('msg_' || replace(gen_random_uuid()::text, '-', ''), NEW.id, NEW.institute_id, NEW.batch_id, kind, data);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "batch_classes_webhook_messages_changed" AFTER UPDATE OF state, class_id, join_link ON "batch_classes"
  FOR EACH ROW
  WHEN ((OLD.state IS DISTINCT FROM NEW.state AND (NEW.state::text IN ('synced', 'failed', 'needs_review', 'abandoned') OR OLD.state::text = 'abandoned'))
     OR (NEW.state::text = 'synced' AND (OLD.class_id IS DISTINCT FROM NEW.class_id OR OLD.join_link IS DISTINCT FROM NEW.join_link)))
  EXECUTE FUNCTION "webhook_message_of_batch"();
--> statement-breakpoint
CREATE TRIGGER "batch_classes_webhook_messages_recorded" AFTER INSERT ON "batch_classes"
  FOR EACH ROW
  WHEN (NEW.state::text IN ('synced', 'failed', 'needs_review', 'abandoned'))
  EXECUTE FUNCTION "webhook_message_of_batch"();

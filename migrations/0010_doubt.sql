-- The integrator's version of the values a class was last given (applied_event), so batch.updated
-- tells what was applied, not what was last received. Nullable, no default: rewrites nothing.
ALTER TABLE "batch_classes" ADD COLUMN "applied_version" bigint;--> statement-breakpoint
-- When every edit-class an earlier run sent has taken effect or been dropped (src/sync/change-steps.ts
-- waits for it before the next edit). Nullable, no default: rewrites nothing.
ALTER TABLE "batch_classes" ADD COLUMN "calls_settled_at" timestamp with time zone;--> statement-breakpoint
-- One rule for doubt (src/mapping/doubt.ts): a batch whose add-class was sent and whose outcome was
-- never settled may have a class, so it is never `failed` (nothing would look again, and a cancel or
-- a retry read it as "nothing was made"). Earlier versions left such batches `failed` when the
-- listing was refused or attempts ran out while settling: they go to `needs_review` for an operator,
-- with the reason, and an audit line. Only failed rows are read (batch_classes_state_updated_idx).
WITH moved AS (
  UPDATE "batch_classes" b
     SET state = 'needs_review', failed_at = null, updated_at = now(),
         review = jsonb_build_object(
           'reason', 'the batch failed (' || coalesce(b.last_error, 'no error recorded') || ') while an add-class of unknown outcome was not settled; a class may exist: check the institute''s listing, then retry (it settles from the listing) or abandon it',
           'evidence', jsonb_build_object('className', b.class_name, 'matches', '[]'::jsonb, 'mappedElsewhere', '[]'::jsonb))
   WHERE b.state = 'failed' AND b.class_id IS NULL AND b.create_sent_at IS NOT NULL
  RETURNING b.id
)
INSERT INTO "batch_events" (batch_row_id, type, from_state, to_state, detail)
SELECT id, 'transition', 'failed', 'needs_review', '{"resolution":"doubt_rule"}'::jsonb FROM moved;--> statement-breakpoint
-- Earlier versions also read such a failed batch as "nothing was made" when it was cancelled (it
-- ended `cancelled` while its class may be live) and, once reopened, `pending` (whose next run would
-- send a second add-class). A cancelled one goes back to `creating`: a run settles the doubt from the
-- listing by the name it sent (class_name: a cancel never changed it), then archives the class or
-- ends it `cancelled`. A pending one may have been renamed since the add-class went out, so the name
-- that would settle it is not known for sure: `needs_review`, for an operator.
WITH moved AS (
  UPDATE "batch_classes" b
     SET state = CASE WHEN b.state::text = 'cancelled' THEN 'creating'::batch_state ELSE 'needs_review'::batch_state END,
         cancelled_at = CASE WHEN b.state::text = 'cancelled' THEN coalesce(b.cancelled_at, now()) ELSE b.cancelled_at END,
         review = CASE WHEN b.state::text = 'cancelled' THEN b.review ELSE jsonb_build_object(
           'reason', 'an earlier version reopened this batch while an add-class of it of unknown outcome was not settled; a class may exist, possibly under the name sent then: check the institute''s listing, then retry (it settles from the listing) or abandon it',
           'evidence', jsonb_build_object('className', b.class_name, 'matches', '[]'::jsonb, 'mappedElsewhere', '[]'::jsonb)) END,
         updated_at = now()
   WHERE b.state::text IN ('cancelled', 'pending') AND b.class_id IS NULL AND b.create_sent_at IS NOT NULL
  RETURNING b.id, b.state
)
INSERT INTO "batch_events" (batch_row_id, type, to_state, detail)
SELECT id, 'transition', state::text, '{"resolution":"doubt_rule"}'::jsonb FROM moved;--> statement-breakpoint
-- The same for batches abandoned from such a failure: an undo returns them to `needs_review`.
UPDATE "batch_classes" SET abandoned_from = 'needs_review'
 WHERE state::text = 'abandoned' AND abandoned_from = 'failed' AND class_id IS NULL AND create_sent_at IS NOT NULL;--> statement-breakpoint
-- The outbox's writer, as in 0008, except:
-- - batch.updated carries what the class was given (class_name, applied_event's subject,
--   applied_version), and is written only when that changed: an edit the remote refused, or a
--   reopen's archive, changes nothing the class carries and tells nothing;
-- - an undone abandon that ends `cancelled` (the integrator cancelled it meanwhile) is batch.cancelled.
-- States are compared as text, as in 0008: on a new database every migration runs in one transaction,
-- in which 0008's new enum value cannot be used yet.
CREATE OR REPLACE FUNCTION "webhook_message_of_batch"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  data jsonb := jsonb_build_object('instituteId', NEW.institute_id, 'batchId', NEW.batch_id, 'state', NEW.state);
  iso text := 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.state::text = 'abandoned' AND NEW.state::text NOT IN ('abandoned', 'cancelled') THEN
    kind := 'batch.abandon_undone';
    data := data || jsonb_build_object('classId', NEW.class_id);
  ELSIF TG_OP = 'UPDATE' AND NEW.state::text = 'synced' AND OLD.state::text = 'synced' AND NEW.applied_revision > OLD.applied_revision
        AND OLD.class_id IS NOT DISTINCT FROM NEW.class_id AND OLD.join_link IS NOT DISTINCT FROM NEW.join_link THEN
    IF OLD.applied_event IS NOT DISTINCT FROM NEW.applied_event AND OLD.class_name IS NOT DISTINCT FROM NEW.class_name
       AND OLD.applied_version IS NOT DISTINCT FROM NEW.applied_version THEN
      RETURN NULL;
    END IF;
    kind := 'batch.updated';
    data := data || jsonb_build_object('classId', NEW.class_id, 'className', NEW.class_name,
      'subject', coalesce(NEW.applied_event, NEW.event) ->> 'subject', 'version', NEW.applied_version,
      'updatedAt', to_char(now() AT TIME ZONE 'UTC', iso));
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

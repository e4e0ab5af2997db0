-- The trace id of the span active when each audit event was written (src/telemetry/trace-id.ts), so an
-- operator goes from a batch's history to its trace. Null for the events written before, and for those
-- written with nothing traced. Adding a nullable column without a default rewrites nothing. No index:
-- nothing looks events up by trace id.
ALTER TABLE "batch_events" ADD COLUMN "trace_id" text;

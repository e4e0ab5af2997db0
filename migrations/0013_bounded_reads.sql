-- Bounded reads: a page of batches in a state, or of an institute in a state, read in id order
-- from an index of its own (src/mapping/list-batches.ts, batches-of-institute.ts), and settled
-- webhook messages found by age without reading the pending ones (outbox/stats.ts, pruneMessages).
-- Each build holds writes to its table until `migrate` commits: measured on 2 cores with a million
-- batches, 0.4-0.7 s and 1.5 s for the two on batch_classes, 0.3 s for 500,000 settled messages
-- among a million (bench:scale reports it at its size).
CREATE INDEX "batch_classes_state_id_idx" ON "batch_classes" USING btree ("state","id");--> statement-breakpoint
CREATE INDEX "batch_classes_institute_state_id_idx" ON "batch_classes" USING btree ("institute_id","state","id");--> statement-breakpoint
CREATE INDEX "webhook_messages_settled_idx" ON "webhook_messages" USING btree ("occurred_at") WHERE "webhook_messages"."status" <> 'pending';
ALTER TABLE "batch_classes" ADD COLUMN "create_ended_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "create_acked_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "batch_classes_institute_acked_idx" ON "batch_classes" USING btree ("institute_id","create_acked_at") WHERE "batch_classes"."create_acked_at" is not null;
CREATE TABLE "batch_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"batch_row_id" bigint NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"type" text NOT NULL,
	"from_state" text,
	"to_state" text,
	"operation" text,
	"http_status" integer,
	"body_status" integer,
	"duration_ms" integer,
	"outcome" text,
	"error" text,
	"attempt" integer,
	"worker_id" text,
	"class_id" text,
	"detail" jsonb
);
--> statement-breakpoint
ALTER TABLE "batch_events" ADD CONSTRAINT "batch_events_batch_row_id_batch_classes_id_fk" FOREIGN KEY ("batch_row_id") REFERENCES "public"."batch_classes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "batch_events_batch_idx" ON "batch_events" USING btree ("batch_row_id","id");--> statement-breakpoint
CREATE INDEX "batch_events_at_idx" ON "batch_events" USING btree ("at");
CREATE TYPE "public"."batch_state" AS ENUM('pending', 'creating', 'created', 'link_enabled', 'synced', 'failed', 'needs_review');--> statement-breakpoint
CREATE TABLE "batch_classes" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"institute_id" text NOT NULL,
	"batch_id" text NOT NULL,
	"class_name" text NOT NULL,
	"class_id" text,
	"join_link" text,
	"state" "batch_state" DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"last_error_kind" text,
	"event" jsonb NOT NULL,
	"review" jsonb,
	"lease_owner" text,
	"lease_epoch" integer DEFAULT 0 NOT NULL,
	"lease_expires_at" timestamp with time zone,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"create_sent_at" timestamp with time zone,
	"class_created_at" timestamp with time zone,
	"link_enabled_at" timestamp with time zone,
	"synced_at" timestamp with time zone,
	"failed_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "batch_classes_institute_batch_key" ON "batch_classes" USING btree ("institute_id","batch_id");--> statement-breakpoint
CREATE UNIQUE INDEX "batch_classes_class_id_key" ON "batch_classes" USING btree ("class_id") WHERE "batch_classes"."class_id" is not null;--> statement-breakpoint
CREATE INDEX "batch_classes_state_updated_idx" ON "batch_classes" USING btree ("state","updated_at");--> statement-breakpoint
CREATE INDEX "batch_classes_institute_class_name_idx" ON "batch_classes" USING btree ("institute_id","class_name");
ALTER TYPE "public"."batch_state" ADD VALUE 'abandoned';--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "abandoned_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "abandoned_from" "batch_state";--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "abandon_reason" text;
CREATE TYPE "public"."batch_lane" AS ENUM('live', 'operator', 'backfill');--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "lane" "batch_lane" DEFAULT 'live' NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_classes" ADD COLUMN "lane_since" timestamp with time zone DEFAULT now() NOT NULL;
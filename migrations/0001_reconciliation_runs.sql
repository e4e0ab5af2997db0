CREATE TABLE "reconciliation_runs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"trigger" text NOT NULL,
	"dry_run" boolean DEFAULT false NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"institutes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"counts" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"repairs" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"error" text,
	"link_check_cursor" bigint
);
--> statement-breakpoint
CREATE INDEX "reconciliation_runs_started_at_idx" ON "reconciliation_runs" USING btree ("started_at");
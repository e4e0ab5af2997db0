-- Which webhook dispatchers run and which institutes' messages each can send (src/db/schema/webhook-routes.ts):
-- a message is recorded `skipped` only when no dispatcher seen in the last minute can send it, so a rolling
-- deploy that turns webhooks on loses none to the workers that have no endpoint yet. One row per worker; a
-- new table, so nothing is rewritten. No index: a fleet has a handful of rows.
CREATE TABLE "webhook_routes" (
	"dispatcher_id" text PRIMARY KEY NOT NULL,
	"institute_ids" text[],
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL
);

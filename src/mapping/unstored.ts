import { type SQL, sql } from 'drizzle-orm';

/**
 * What a run learned but has not stored yet: edit-class enabled the link. edit-class may be sent
 * again harmlessly, so that recovery point waits for the run's next write (synced, a lease touch,
 * or the release) instead of costing a statement of its own.
 */
export interface Unstored {
  linkEnabledAt?: Date | undefined;
}

/** The assignments that store `unstored`; undefined when there is nothing to store. */
export function unstoredAssignments(unstored: Unstored, options: { keepState?: boolean } = {}): SQL | undefined {
  if (!unstored.linkEnabledAt) return undefined;
  const at = sql`link_enabled_at = ${unstored.linkEnabledAt.toISOString()}::timestamptz`;
  return options.keepState ? at : sql`state = 'link_enabled', ${at}`;
}

import { type SQL, sql } from 'drizzle-orm';
import { value } from './sql.ts';

/**
 * What a run learned but has not stored yet: edit-class enabled the link. edit-class may be sent
 * again harmlessly, so that recovery point waits for the run's next write (synced, or the release)
 * instead of costing a statement of its own.
 */
export interface Unstored {
  linkEnabledAt?: Date | undefined;
  /** An edit-class of this run ended with its outcome unknown: it may still take effect this long after the run ends (CLASSROOM_TIMEOUT). */
  editLandsWithinMs?: number | undefined;
}

/**
 * The assignments that store an unstored link step (their value: `unstoredValues`). A batch that
 * fails keeps `failed`: its stored link_enabled_at tells `retry` to resume after edit-class.
 */
export function storeLinkStep(options: { keepState?: boolean } = {}): SQL {
  const at = sql`link_enabled_at = ${value('linkEnabledAt')}::timestamptz`;
  return options.keepState ? at : sql`state = 'link_enabled', ${at}`;
}

/** The values `storeLinkStep` needs; undefined when there is nothing to store. */
export function unstoredValues(unstored: Unstored): { linkEnabledAt: string } | undefined {
  return unstored.linkEnabledAt ? { linkEnabledAt: unstored.linkEnabledAt.toISOString() } : undefined;
}

// The listing carries no join links, so a link blanked or replaced on the remote is invisible to it.
// Each pass therefore reads a bounded number of synced classes with get-class (through the shared
// rate limit), continuing where the previous pass stopped: every synced class is checked in turn,
// and a pass never spends more than `budget` calls on it.
import { inArray } from 'drizzle-orm';
import type { ClassroomClient } from '../classroom/client.ts';
import type { Db } from '../db/client.ts';
import { batchClasses } from '../db/schema/index.ts';
import type { Logger } from '../logger.ts';
import { eachLimited } from './mappings.ts';
import { type InSync, inSyncFinding } from './classify.ts';
import type { Finding } from './types.ts';

export interface LinkCheckResult {
  /** in_sync findings whose remote link is blank or differs from the stored one, with the reason. */
  flagged: Map<Finding, string>;
  checked: number;
  failed: number;
  /** Row id of the last class checked; where the next pass starts. */
  cursor: number | null;
}

/**
 * Picks up to `budget` synced in-sync batches matched by id, in row-id order starting after `cursor`
 * and wrapping around, so successive passes cover every synced class in turn.
 */
export function pickForLinkCheck(chunks: readonly { instituteId: string; entries: readonly InSync[] }[], budget: number, cursor: number | null): Finding[] {
  if (budget <= 0) return [];
  const synced: { instituteId: string; entry: InSync }[] = [];
  for (const { instituteId, entries } of chunks) {
    for (const entry of entries) if (entry.m.state === 'synced' && !entry.byName) synced.push({ instituteId, entry });
  }
  synced.sort((a, b) => a.entry.m.id - b.entry.m.id);
  const start = cursor === null ? 0 : synced.findIndex((s) => s.entry.m.id > cursor);
  const from = start < 0 ? 0 : start;
  const picked = synced.slice(from, from + budget);
  if (picked.length < budget) picked.push(...synced.slice(0, Math.min(from, budget - picked.length)));
  return picked.map((s) => inSyncFinding(s.instituteId, s.entry));
}

export async function checkLinks(
  deps: { db: Db; classroom: ClassroomClient; logger: Logger },
  picked: readonly Finding[],
): Promise<LinkCheckResult> {
  const result: LinkCheckResult = { flagged: new Map(), checked: 0, failed: 0, cursor: picked.at(-1)?.rowId ?? null };
  if (picked.length === 0) return result;
  // One select for the stored links of the few picked rows; the links never leave this function.
  const stored = new Map(
    (
      await deps.db
        .select({ id: batchClasses.id, joinLink: batchClasses.joinLink })
        .from(batchClasses)
        .where(inArray(batchClasses.id, picked.map((f) => f.rowId!)))
    ).map((r) => [r.id, r.joinLink]),
  );
  await eachLimited(picked, 4, async (finding) => {
    try {
      const record = await deps.classroom.getClass(finding.classId!);
      result.checked += 1;
      if (!record.joinMagicLink) result.flagged.set(finding, 'the remote join link is blank (disabled on the remote)');
      else if (record.joinMagicLink !== stored.get(finding.rowId!)) result.flagged.set(finding, 'the remote join link differs from the stored one');
    } catch (error) {
      // A class deleted since the listing, or a transient failure: the next pass sees it again.
      result.failed += 1;
      deps.logger.debug({ err: error, classId: finding.classId }, 'join-link check failed; skipped this pass');
    }
  });
  return result;
}

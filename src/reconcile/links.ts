// The listing carries no join links, so a link blanked or replaced on the remote is invisible to it.
// Each pass therefore reads a bounded number of synced classes with get-class (through the shared
// rate limit), continuing where the previous pass stopped: every synced class is checked in turn,
// and a pass never spends more than `budget` calls on it.
import type { ClientFor } from './accounts.ts';
import type { Logger } from '../logging/logger.ts';
import * as mapping from '../mapping/index.ts';
import type { Db } from '../mapping/index.ts';
import { eachLimited } from './mappings.ts';
import { storedBatch, withClass } from './repair.ts';
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
  const from = Math.max(start, 0);
  const picked = synced.slice(from, from + budget);
  if (picked.length < budget) picked.push(...synced.slice(0, Math.min(from, budget - picked.length)));
  return picked.map((s) => inSyncFinding(s.instituteId, s.entry));
}

export async function checkLinks(deps: { db: Db; clientFor: ClientFor; logger: Logger }, picked: readonly Finding[]): Promise<LinkCheckResult> {
  const result: LinkCheckResult = { flagged: new Map(), checked: 0, failed: 0, cursor: picked.at(-1)?.rowId ?? null };
  if (picked.length === 0) return result;
  // One select for the stored links of the few picked rows; the links never leave this function.
  const stored = await mapping.storedLinks(
    deps.db,
    picked.map((f) => storedBatch(f).rowId),
  );
  const failures: { classId: string | null | undefined; error: string }[] = [];
  await eachLimited(picked, 4, async (finding) => {
    try {
      const record = await (await deps.clientFor(finding.instituteId)).getClass(withClass(finding).classId);
      result.checked += 1;
      if (!record.joinMagicLink) result.flagged.set(finding, 'the remote join link is blank (disabled on the remote)');
      else if (record.joinMagicLink !== stored.get(storedBatch(finding).rowId)) result.flagged.set(finding, 'the remote join link differs from the stored one');
    } catch (error) {
      // A class deleted since the listing, or a transient failure: the next pass sees it again.
      result.failed += 1;
      failures.push({ classId: finding.classId, error: error instanceof Error ? error.message : String(error) });
    }
  });
  // One line per pass, not per class: a remote that is down would otherwise flood the log.
  if (failures.length > 0) {
    deps.logger.warn(
      { failed: failures.length, checked: result.checked, first: failures.slice(0, 3) },
      'join-link checks failed; those classes are checked again next pass',
    );
  }
  return result;
}

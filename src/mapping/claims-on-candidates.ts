import { sql } from 'drizzle-orm';
import { MAY_HAVE_CLASS } from './doubt.ts';
import { type Db, execute } from './sql.ts';

/** What the mapping table knows about the classes that could be a batch's. */
export interface ClaimsOnCandidates {
  /** Candidate ids stored for other batches. */
  mappedElsewhere: ReadonlySet<string>;
  /** Class names of the institute's other batches that sent an add-class and have no ClassID yet. */
  otherClaimants: readonly string[];
}

/**
 * One statement: which candidate ids are stored for other batches, and the class names of the
 * institute's other batches that sent an add-class and have no ClassID yet (they may have made one
 * of the candidates themselves).
 */
export async function claimsOnCandidates(db: Db, row: { id: number; instituteId: string }, classIds: readonly string[]): Promise<ClaimsOnCandidates> {
  const result = await execute<{ class_id: string | null; class_name: string }>(
    db,
    sql`
    select b.class_id, b.class_name from batch_classes b
     where b.id <> ${row.id}
       and (b.class_id = any(${sql.param([...classIds])}::text[]) or (b.institute_id = ${row.instituteId} and ${MAY_HAVE_CLASS}))`,
  );
  const mappedElsewhere = new Set<string>();
  const otherClaimants: string[] = [];
  for (const r of result.rows) {
    if (r.class_id) mappedElsewhere.add(r.class_id);
    else otherClaimants.push(r.class_name);
  }
  return { mappedElsewhere, otherClaimants };
}

import { sql } from 'drizzle-orm';
import type { Db } from './sql.ts';

/** The join links stored for these rows (a secret: callers compare them, never log them). */
export async function storedLinks(db: Db, rowIds: readonly number[]): Promise<Map<number, string | null>> {
  if (rowIds.length === 0) return new Map();
  const result = await db.execute<{ id: number; join_link: string | null }>(
    sql`select id::float8 as id, join_link from batch_classes where id = any(${sql.param([...rowIds])}::bigint[])`,
  );
  return new Map(result.rows.map((r) => [r.id, r.join_link]));
}

import type { SQL } from 'drizzle-orm';
import { type Db, execute } from './sql.ts';

/** Runs `statement` (one slice of at most `slice` rows) until a slice deletes fewer; returns the rows deleted. */
export async function pruneInSlices(db: Db, statement: (limit: number) => SQL, slice: number): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await execute(db, statement(slice));
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < slice) return total;
  }
}

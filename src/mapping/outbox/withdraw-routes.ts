import { sql } from 'drizzle-orm';
import { type Db, execute } from '../sql.ts';

/** A dispatcher closing: its routes are gone for the fleet at once. */
export async function withdrawRoutes(db: Db, dispatcherId: string): Promise<void> {
  await execute(db, sql`delete from webhook_routes where dispatcher_id = ${dispatcherId}`);
}

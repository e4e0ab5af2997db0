// A steady stream of batches, as an integrator's system sends them, and how many have finished.
import type pg from 'pg';
import { type PublishDeps, publishBatches } from '../../src/intake/publish.ts';
import { sleep } from './scratch.ts';

/** Publishes `events` at `rate` a second (small groups every 20 ms) and resolves when all are published. */
export async function publishAtRate(deps: PublishDeps, events: Parameters<typeof publishBatches>[1], rate: number): Promise<void> {
  const n = events.length;
  const started = performance.now();
  let published = 0;
  while (published < n) {
    const due = Math.min(n, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
    if (due > published) {
      await publishBatches(deps, events.slice(published, due));
      published = due;
    }
    await sleep(20);
  }
}

/** Batches whose id matches `like` that have reached an end state (synced, failed or needs_review). */
export async function countTerminal(pool: pg.Pool, like: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `select count(*) as n from batch_classes where state in ('synced', 'failed', 'needs_review') and batch_id like $1`,
    [like],
  );
  return Number(rows[0]!.n);
}

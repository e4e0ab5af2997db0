// The test harness itself: teardown closes what a test opened, newest first and the harness last,
// and fails when a test left a worker or a database connection open.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createSyncWorker } from '../../src/sync/sync-worker.ts';
import { PG_SERVER, waitFor } from '../helpers/harness.ts';
import { Teardown, useHarness } from '../helpers/use-harness.ts';

describe('Teardown', () => {
  it('closes what was deferred newest first, then the harness, and drops its database', async () => {
    const teardown = new Teardown();
    const h = await teardown.harness({});
    const order: string[] = [];
    const scope = teardown.scope();
    scope.defer(() => order.push('first registered'));
    const worker = scope.syncWorker(h.runtime);
    scope.defer(() => order.push('last registered'));
    await worker.worker.waitUntilReady();
    await teardown.close();
    expect(order).toEqual(['last registered', 'first registered']);
    expect(worker.worker.isRunning()).toBe(false);
    expect(await databaseExists(h.databaseName)).toBe(false);
  });

  it('fails when a sync worker nobody registered is still running, and still drops everything', async () => {
    const teardown = new Teardown(200);
    const h = await teardown.harness({});
    const leaked = createSyncWorker(h.runtime, { autoSweep: false });
    await leaked.worker.waitUntilReady();
    await waitFor(async () => (await h.runtime.queue.getWorkers()).length === 1, 'the worker to be listed');
    try {
      await expect(teardown.close()).rejects.toThrow(/1 BullMQ worker\(s\) still consuming cs-test-\w+: a SyncWorker or worker process nobody closed/);
      expect(await databaseExists(h.databaseName)).toBe(false);
    } finally {
      await leaked.close(0);
    }
  });

  it('fails when a pool on the test database is still open', async () => {
    const teardown = new Teardown(200);
    const h = await teardown.harness({});
    const pool = new pg.Pool({ connectionString: h.config.databaseUrl, application_name: 'leaky-pool' });
    pool.on('error', () => {});
    await pool.query('select 1');
    try {
      await expect(teardown.close()).rejects.toThrow(/a PostgreSQL connection to the test database: a pool or client nobody closed \(leaky-pool, idle/);
      expect(await databaseExists(h.databaseName)).toBe(false);
    } finally {
      await pool.end().catch(() => {});
    }
  });
});

describe('useHarness', () => {
  const { h } = useHarness({ env: { SYNC_CONCURRENCY: '3' } });

  it('stands for the harness its beforeAll made, with the settings asked for', () => {
    expect(h.config.sync.concurrency).toBe(3);
    expect(h.sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(h.config.queuePrefix).toMatch(/^cs-test-/);
  });

  it('leaves closing the harness to teardown', () => {
    expect(() => h.close()).toThrow(/closed by useHarness at teardown/);
  });
});

async function databaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    return (await client.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

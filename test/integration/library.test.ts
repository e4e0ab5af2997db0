// The package as the integrator's Node code uses it: everything imported from src/index.ts (the
// package's `exports`), end to end against the sandbox and a worker.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BATCH_STATES,
  ConfigError,
  InvalidEventError,
  createClassroomSync,
  createRuntime,
  createSyncWorker,
  loadConfig,
  type ClassroomSync,
} from '../../src/index.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { waitFor } from '../helpers/harness.ts';
import { ROOT, killAllChildren, scratchDir } from '../helpers/cli.ts';
import { useHarness } from '../helpers/use-harness.ts';

const harness = useHarness();
const { h } = harness;
harness.defer(killAllChildren);
let sync: ClassroomSync;

beforeAll(() => {
  const config = loadConfig(h.env);
  const library = createClassroomSync(config, { logger: createLogger({ level: 'silent' }) });
  sync = library;
  harness.defer(() => library.close());
  // The worker the integrator would run as `classroom-sync worker`, here in-process from the same exports.
  const workerRuntime = createRuntime(config, { logger: createLogger({ level: 'silent' }) });
  harness.defer(() => workerRuntime.close());
  const worker = createSyncWorker(workerRuntime, { autoSweep: false });
  harness.defer(() => worker.close(5_000));
});

describe('library: createClassroomSync', () => {
  it('publishes a batch and reads back its mapping once the worker has synced it', async () => {
    const accepted = await sync.publishBatchCreated({ batchId: 'lib-1', name: 'Library Batch', subject: 'Maths' });
    expect(accepted).toEqual({
      batchId: 'lib-1',
      instituteId: sync.config.classroom.instituteId,
      type: 'batch.created',
      outcome: 'recorded',
      state: 'pending',
      duplicate: false,
      queued: true,
    });

    const mapping = await waitFor(async () => {
      const view = await sync.getBatch('lib-1');
      return view?.state === 'synced' ? view : undefined;
    }, 'lib-1 synced');
    const remote = h.sandbox.state().classes!.find((c) => c.id === mapping.classId);
    expect(remote?.name).toBe('Library Batch');
    expect(mapping.joinLink).toBe(remote?.joinMagicLink);
    expect(mapping.syncedAt).toBeInstanceOf(Date);

    // Publishing again is harmless and says so.
    expect(await sync.publishBatchCreated({ batchId: 'lib-1', name: 'Library Batch', subject: 'Maths' })).toMatchObject({
      duplicate: true,
      state: 'synced',
      queued: false,
    });
    expect(h.sandbox.state().byName['Library Batch']).toBe(1);
  });

  it('rejects a bad event with InvalidEventError naming each field', async () => {
    const error = await sync.publishBatchCreated({ batchId: 'lib-bad', name: '', subject: 'Maths' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidEventError);
    expect((error as InvalidEventError).problems).toEqual([{ field: 'name', reason: 'must not be empty' }]);
    expect(await sync.getBatch('lib-bad')).toBeUndefined();
  });

  it('publishes many, lists them by state page by page, and counts by state', async () => {
    const events = Array.from({ length: 7 }, (_, i) => ({ batchId: `lib-many-${i}`, name: `Many ${i}`, subject: 'Art' }));
    const outcomes = await sync.publishBatches([...events, { name: 'no id' }]);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(7);
    expect(outcomes[7]).toMatchObject({
      ok: false,
      index: 7,
      problems: [
        { field: 'batchId', reason: 'is required' },
        { field: 'subject', reason: 'is required' },
      ],
    });

    await waitFor(async () => (await sync.countByState()).synced === 8, '8 synced');
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await sync.listBatches({ state: 'synced', limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.batches.map((b) => b.batchId));
      expect(page.batches.every((b) => b.state === 'synced' && b.classId)).toBe(true);
      cursor = page.next ?? undefined;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(['lib-1', ...events.map((e) => e.batchId)]);
    expect((await sync.listBatches({ state: 'failed' })).batches).toEqual([]);
    const counts = await sync.countByState();
    expect(Object.keys(counts).sort()).toEqual([...BATCH_STATES].sort());
  });

  it('reports a bad configuration as ConfigError, naming the variable', () => {
    expect(() => loadConfig({ CLASSROOM_API_KEY: 'short' })).toThrow(ConfigError);
    expect(() => loadConfig({ CLASSROOM_API_KEY: 'short' })).toThrow(/CLASSROOM_API_KEY/);
  });

  it('with Redis down, a published batch is still recorded (the sweep queues it later), and close() returns', async () => {
    const offline = createClassroomSync(loadConfig({ ...h.env, REDIS_URL: 'redis://127.0.0.1:1' }), { logger: createLogger({ level: 'silent' }) });
    try {
      const accepted = await offline.publishBatchCreated({ batchId: 'lib-offline', name: 'Offline', subject: 'Art' });
      expect(accepted).toMatchObject({ state: 'pending', duplicate: false, queued: false });
      expect((await offline.getBatch('lib-offline'))?.state).toBe('pending');
    } finally {
      await offline.close();
    }
  });

  it('close() is safe to call twice', async () => {
    const other = createClassroomSync(loadConfig(h.env), { logger: createLogger({ level: 'silent' }) });
    expect((await other.countByState()).synced).toBeGreaterThan(0);
    await other.close();
    await other.close();
  });
});

describe('docs/library.md: Using it from Node.js', () => {
  it('the example runs as written (against this test database and queue), and its batch syncs', async () => {
    const page = readFileSync(join(ROOT, 'docs/library.md'), 'utf8');
    expect(page).toMatch(/^# Using it from Node\.js$/m);
    const example = /```ts\n([\s\S]*?)```/.exec(page)?.[1];
    expect(example).toContain("from 'classroom-sync'");
    // The package name resolves to src/index.ts, exactly as package.json `exports` says.
    const file = join(scratchDir(), 'example.mts'); // .mts: an ES module (top-level await) outside any package
    writeFileSync(file, example!.replace("from 'classroom-sync'", `from ${JSON.stringify(pathToFileURL(join(ROOT, 'src/index.ts')).href)}`));
    const run = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), file], {
      env: { PATH: process.env.PATH ?? '', ...h.env },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const mapping = await waitFor(async () => {
      const view = await sync.getBatch('B-1001');
      return view?.state === 'synced' ? view : undefined;
    }, 'B-1001 from the docs/library.md example synced');
    expect(mapping.classId).toMatch(/^[0-9a-f]{24}$/);
  });
});

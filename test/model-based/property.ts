// Model-based property test of the doubt rule (docs/reliability.md; every path that moves a batch, and its invariants):
// random sequences of commands drive the REAL code (runBatch, intake, retry, abandon / undo,
// exhaustion, reconciliation, the sweep) against real PostgreSQL, Redis and the sandbox over HTTP;
// nothing mocks fetch or the database. After every command the invariants are read from the row, the
// sandbox's ground truth and the webhook outbox (test/model-based/invariants.ts); each path's own rule is
// checked by its action (test/model-based/rules.ts); every sequence ends with the liveness check
// (test/model-based/rest.ts). One batch per sequence, a fresh id each; a property's sequences share one harness.
//
// Two properties, each in a file of its own so that vitest runs them side by side (on two workers,
// each with its own harness):
//   sequential  test/integration/batch-model.sequential.property.test.ts
//               fc.commands + fc.asyncModelRun: one path at a time, runs killed or paused mid-way
//   racing      test/integration/batch-model.racing.property.test.ts
//               fc.scheduledModelRun + fc.scheduler(): a run racing other paths, gate by gate
// `npx vitest run test/integration/batch-model.` runs both.
//
// MODEL_RUNS=n sequences per property (by default 75; TEST_DEPTH=full, as npm run test:all sets it: 250 each;
// npm run test:model: 1,000 each, 2,000 in all);
// MODEL_COMMANDS=n commands at most per sequence (default 20); MODEL_ONLY=sequential|racing;
// FC_SEED=<seed> replays a run, FC_PATH=<path> (run the failing property's file alone, or with MODEL_ONLY:
// each property has its own) one failure (each file prints its seed; a failure prints both; a race
// replays its scheduler's picks, not the timing of I/O); FC_SHRINK=0 skips shrinking
// (MODEL_SHRINKS=n caps it, default 150: each shrink step re-runs the real system);
// MODEL_IGNORE=kind,kind ignores violations whose kind starts with one of these (to look past a
// known defect), MODEL_FOCUS=kind counts only those whose kind starts with it (to shrink one);
// MODEL_TRACE=1 adds the batch's audit trail to a failure; MODEL_STATS=1 prints what the sequences exercised.
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { depth } from '../helpers/depth.ts';
import { PG_SERVER } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { type Sequence, initialModel, racingArbOf, sequentialArb } from './commands.ts';
import { installObserver } from './invariants.ts';
import { REQUEST_TIMEOUT_MS, RealSystem } from './real-system.ts';
import { driveToRest } from './rest.ts';

export type Property = 'sequential' | 'racing';

const env = process.env;
const RUNS = Number(env.MODEL_RUNS ?? depth(75, 250));
const MAX_COMMANDS = Number(env.MODEL_COMMANDS ?? 20);
const SHRINKS = Number(env.MODEL_SHRINKS ?? 150);
const IGNORE = (env.MODEL_IGNORE ?? '').split(',').filter(Boolean);
/** Whether a violation of `kind` fails the property (see MODEL_IGNORE and MODEL_FOCUS above). */
const counts = (kind: string) => kind.startsWith(env.MODEL_FOCUS ?? '') && !IGNORE.some((prefix) => kind.startsWith(prefix));

/**
 * Commits on the property's database return before their WAL is flushed to disk (synchronous_commit
 * off, set on the database before its pool opens a connection): what the other sessions see, and
 * when, is unchanged; only a crash of PostgreSQL itself could lose the last commits, and no sequence
 * crashes it. A sequence commits dozens of times, each otherwise waiting for an fsync.
 */
async function commitWithoutFlush(databaseName: string): Promise<void> {
  const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await admin.connect();
  try {
    await admin.query(`alter database ${pg.escapeIdentifier(databaseName)} set synchronous_commit = off`);
  } finally {
    await admin.end();
  }
}

/** The test of one property (a file's whole body): its harness, its seed printed, RUNS sequences. */
export function batchModelProperty(property: Property): void {
  const seed = Number(env.FC_SEED ?? Math.floor(Math.random() * 0x7fffffff));
  console.log(`batch-model ${property} seed`, seed, `(FC_SEED=${seed} replays; ${RUNS} sequences)`);

  const { h } = useHarness({ env: { CLASSROOM_TIMEOUT: `${REQUEST_TIMEOUT_MS}ms`, SYNC_LEASE: '3s' } });
  beforeAll(async () => {
    await commitWithoutFlush(h.databaseName);
    await installObserver(h.runtime.database.pool);
  });

  let sequences = 0;
  const seen: Record<string, number> = {};
  afterAll(() => {
    if (env.MODEL_STATS) console.log(`batch-model ${property} coverage`, Object.fromEntries(Object.entries(seen).sort()));
  });

  async function runSequence(s: Sequence, scheduler?: fc.Scheduler): Promise<void> {
    const model = initialModel();
    const real = await RealSystem.begin(h, ++sequences, model, { lagMs: s.lagMs, counts, ...(scheduler ? { scheduler } : {}) });
    try {
      const setup = () => ({ model, real });
      if (scheduler) await fc.scheduledModelRun(scheduler, setup, s.cmds);
      else await fc.asyncModelRun(setup, s.cmds);
      await driveToRest(real, model);
    } finally {
      for (const [what, n] of Object.entries(real.seen)) seen[what] = (seen[what] ?? 0) + n;
      seen.sequences = (seen.sequences ?? 0) + 1;
    }
  }

  function parameters<T>(): fc.Parameters<T> {
    const params: fc.Parameters<T> = { numRuns: RUNS, seed, endOnFailure: env.FC_SHRINK === '0' };
    if (env.FC_PATH) params.path = env.FC_PATH;
    return params;
  }

  const timeout = Math.max(120_000, RUNS * 4_000);

  describe('batch model: the doubt rule against the real code', () => {
    if (property === 'sequential') {
      it.skipIf(env.MODEL_ONLY === 'racing')('sequential commands (fc.asyncModelRun)', { timeout }, async () => {
        const arb = fc.limitShrink(sequentialArb(MAX_COMMANDS), SHRINKS);
        await fc.assert(
          fc.asyncProperty(arb, (s) => runSequence(s)),
          parameters(),
        );
      });
    } else {
      it.skipIf(env.MODEL_ONLY === 'sequential')('racing paths (fc.scheduledModelRun)', { timeout }, async () => {
        const arb = fc.limitShrink(racingArbOf(MAX_COMMANDS), SHRINKS);
        await fc.assert(
          fc.asyncProperty(fc.scheduler(), arb, (scheduler, s) => runSequence(s, scheduler)),
          parameters(),
        );
      });
    }
  });
}

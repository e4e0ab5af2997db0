// Intake in bench/scale.ts: publishBatches in this process (1,000 new backfill batches per call, the
// median of 10 calls), and the whole `classroom-sync enqueue --backfill FILE` process beside BullMQ's
// addBulk (the package's goal: enqueue at least half as fast), the two taking turns.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publishBatches } from '../../src/intake/publish.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { addBulkRate, runCli } from '../support/enqueue.ts';
import { quantile, round } from '../support/report.ts';
import { publishDepsOf } from '../support/scratch.ts';

const CHUNK = 1_000;
const INTAKE_CALLS = 10;

export interface Intake {
  /** Events a second through publishBatches: CHUNK per call, the median call. */
  rate(): Promise<number>;
  /** `classroom-sync enqueue --backfill` of `n` new events (whole process) and addBulk of as many jobs, `rounds` times in turn: the medians. */
  enqueueAndAddBulk(n: number, rounds: number): Promise<{ enqueuePerSecond: number; addBulkPerSecond: number }>;
  close(): void;
}

/** New batches of the backlog's institutes (each call extends their long lines), numbered on from the last. */
export function createIntake(runtime: Runtime, env: Record<string, string>, instituteIds: readonly string[], addBulkPrefix: string): Intake {
  let serial = 0;
  let round_ = 0;
  const dir = mkdtempSync(join(tmpdir(), 'cs-bench-scale-'));
  const next = (n: number, prefix = 'new') =>
    Array.from({ length: n }, (_, i) => {
      serial += 1;
      return { batchId: `${prefix}-${serial}`, name: `New ${serial}`, subject: 'Bench', instituteId: instituteIds[i % instituteIds.length]! };
    });
  return {
    async rate() {
      const timings: number[] = [];
      for (let call = 0; call < INTAKE_CALLS; call += 1) {
        const batch = next(CHUNK);
        const started = performance.now();
        await publishBatches(publishDepsOf(runtime), batch, { lane: 'backfill' });
        timings.push(performance.now() - started);
      }
      return round(CHUNK / (quantile(timings, 0.5) / 1_000));
    },
    async enqueueAndAddBulk(n, rounds) {
      const enqueue: number[] = [];
      const addBulk: number[] = [];
      for (let r = 0; r < rounds; r += 1) {
        round_ += 1;
        const file = join(dir, `events-${round_}.ndjson`);
        writeFileSync(
          file,
          `${next(n, 'cli')
            .map((e) => JSON.stringify(e))
            .join('\n')}\n`,
        );
        addBulk.push(await addBulkRate(env, addBulkPrefix, `ab${round_}`, n));
        enqueue.push(n / ((await runCli(env, ['enqueue', '--backfill', file])) / 1_000));
      }
      return { enqueuePerSecond: round(quantile(enqueue, 0.5)), addBulkPerSecond: round(quantile(addBulk, 0.5)) };
    },
    close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

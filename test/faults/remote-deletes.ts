// The fault suite's deletions on the remote: classes removed behind the product's back (a teacher, a
// clean-up script), at random moments. Two kinds of batch are chosen up front from the suite's seed:
//
// - archive targets: when an edit-class that archives the batch's class arrives (its cancel is being
//   applied), the class is deleted first, so the archive meets a 404; a batch seen with a cancel
//   pending and a class is treated the same. Such a cancel must end `cancelled` all the same;
// - random targets: the class is deleted a seeded 0–6 s after the batch is first seen holding it,
//   whatever it is doing then (enabling its link, synced, being renamed).
//
// Only classes a batch's row holds are deleted (never one whose add-class is in doubt: deleting it
// would make "not listed" true, and a second add-class right). Every deleted class is remembered, so
// a duplicate is counted even when one of the two is gone.
import { isNotNull } from 'drizzle-orm';
import { batchClasses } from '../../src/db/schema/index.ts';
import type { createRuntime } from '../../src/runtime/runtime.ts';
import type { RunningSandbox } from '../../src/sandbox/index.ts';
import { deriveSeed, mulberry32 } from '../../src/sandbox/random.ts';
import { trace } from './changes.ts';
import type { LeaseAuditor } from './lease-audit.ts';

type Db = ReturnType<typeof createRuntime>['database']['db'];

export interface Deletion {
  classId: string;
  batchId: string;
  /** `archive`: as its archive arrived; `cancel_pending`: seen with a cancel pending; `random`: at a random moment. */
  when: 'archive' | 'cancel_pending' | 'random';
  /** The batch's state as last read before the deletion (for an archive: the state the run was in). */
  state: string;
}

/** Shares of batches chosen as archive targets and as random targets. */
const ARCHIVE_SHARE = 0.4;
const RANDOM_SHARE = 0.04;

export interface ClassDeleterInput {
  seed: number;
  batchIds: readonly string[];
  sandbox: RunningSandbox;
  db: Db;
  auditor: LeaseAuditor;
}

export class ClassDeleter {
  private readonly archiveTargets = new Set<string>();
  /** Batch id → delay (ms) after its class is first seen. */
  private readonly randomTargets = new Map<string, number>();
  private readonly firstSeen = new Map<string, number>();
  private readonly done: Deletion[] = [];
  private readonly deletedBatches = new Set<string>();
  private stopped = false;
  private loop: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly input: ClassDeleterInput) {
    const random = mulberry32(deriveSeed(input.seed, 0xde1e));
    for (const batchId of input.batchIds) {
      const r = random();
      const delay = Math.floor(random() * 6_000);
      if (r < ARCHIVE_SHARE) this.archiveTargets.add(batchId);
      else if (r < ARCHIVE_SHARE + RANDOM_SHARE) this.randomTargets.set(batchId, delay);
    }
  }

  start(): void {
    this.unsubscribe = this.input.sandbox.onRequest((operation, request) => {
      if (operation !== 'editClass' || (request.body as { archived?: unknown } | null)?.archived !== true || !request.classId) return;
      const batchId = this.input.sandbox.store.get(request.classId)?.extra.chaosRef;
      if (typeof batchId === 'string' && this.archiveTargets.has(batchId)) this.delete(request.classId, batchId, 'archive', 'archiving');
    });
    this.loop = this.poll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    await this.loop;
  }

  deletions(): Deletion[] {
    return [...this.done];
  }

  private async poll(): Promise<void> {
    while (!this.stopped) {
      await sleep(250);
      const rows = await this.input.db
        .select({ batchId: batchClasses.batchId, classId: batchClasses.classId, state: batchClasses.state, cancelledAt: batchClasses.cancelledAt })
        .from(batchClasses)
        .where(isNotNull(batchClasses.classId))
        .catch(() => []);
      const now = Date.now();
      for (const row of rows) {
        if (this.stopped || row.classId === null || this.deletedBatches.has(row.batchId)) continue;
        if (row.cancelledAt !== null && row.state !== 'cancelled' && this.archiveTargets.has(row.batchId)) {
          this.delete(row.classId, row.batchId, 'cancel_pending', row.state);
          continue;
        }
        const delay = this.randomTargets.get(row.batchId);
        if (delay === undefined) continue;
        const seen = this.firstSeen.get(row.batchId) ?? now;
        this.firstSeen.set(row.batchId, seen);
        if (now - seen >= delay) this.delete(row.classId, row.batchId, 'random', row.state);
      }
    }
  }

  /** Deletes the class (once per batch), if the sandbox still holds it. */
  private delete(classId: string, batchId: string, when: Deletion['when'], state: string): void {
    if (this.deletedBatches.has(batchId)) return;
    this.input.auditor.remember(classId, batchId);
    if (!this.input.sandbox.store.delete(classId)) return;
    this.deletedBatches.add(batchId);
    this.done.push({ classId, batchId, when, state });
    trace(`${batchId}: class ${classId} deleted on the remote (${when}, while ${state})`);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

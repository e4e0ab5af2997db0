// What a trace says about one run of a sync job: the institute, batch, lane and attempt, and how
// the run ended. Written on the job's consumer span (BullMQ's `process <queue>`, active while the
// processor runs), so a tracing backend can find a batch's runs by these attributes. Only ids and
// words of our own vocabulary: never a class name, join link, key or token. Without an SDK there is
// no active span and this costs a lookup.
import { trace } from '@opentelemetry/api';
import type { Job } from 'bullmq';
import { laneOfJob, syncJobResult } from './processor.ts';
import type { SyncJobData, SyncResult } from './queue.ts';

type SyncJob = Job<SyncJobData, SyncResult>;
type Processor = (job: SyncJob, token?: string) => Promise<SyncResult>;

export const SPAN_ATTRIBUTES = {
  institute: 'classroom_sync.institute_id',
  batch: 'classroom_sync.batch_id',
  lane: 'classroom_sync.lane',
  attempt: 'classroom_sync.attempt',
  /** The batch's state when the run completed (`synced`, `needs_review`…), else `deferred`, `retrying` or `failed`. */
  outcome: 'classroom_sync.outcome',
} as const;

/** Wraps the processor so the active span of each run names its batch and, at the end, its outcome. */
export function labelRuns(processor: Processor): Processor {
  return async (job, token) => {
    const span = trace.getActiveSpan();
    if (!span?.isRecording()) return processor(job, token);
    span.setAttributes({
      [SPAN_ATTRIBUTES.institute]: job.data.instituteId,
      [SPAN_ATTRIBUTES.batch]: job.data.batchId,
      [SPAN_ATTRIBUTES.lane]: laneOfJob(job),
      [SPAN_ATTRIBUTES.attempt]: job.attemptsMade + 1,
    });
    try {
      const result = await processor(job, token);
      span.setAttribute(SPAN_ATTRIBUTES.outcome, result.state);
      return result;
    } catch (error) {
      span.setAttribute(SPAN_ATTRIBUTES.outcome, syncJobResult(job, error));
      throw error;
    }
  };
}

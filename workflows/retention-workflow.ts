/** D29: what the hourly retention schedule runs; the removal itself is one activity (activities/retention.ts). */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { PERSISTENCE_SUMMARIES } from './summaries';

/** Removes runs, their event logs, idempotency keys, webhook deliveries and files past the retention. */
export async function retentionWorkflow(): Promise<{ runs: number; files: number }> {
  const { applyRetention } = proxyActivities<Activities>({
    summary: PERSISTENCE_SUMMARIES.applyRetention, // D33
    // Deletes in batches and heartbeats between them; a worker that dies mid-way is noticed within a minute.
    startToCloseTimeout: '1h',
    heartbeatTimeout: '60s',
    // The next hour's run picks up whatever this one could not do.
    retry: { initialInterval: '10s', backoffCoefficient: 2, maximumAttempts: 3 },
  });
  return applyRetention();
}

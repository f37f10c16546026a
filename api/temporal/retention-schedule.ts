/**
 * D29: the Temporal Schedule that runs the retention workflow every hour. Created at API start,
 * idempotently: every API process tries, the first one creates it, the others find it there.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { RETENTION_WORKFLOW_TYPE } from '../../workflows/definitions';

const DEFAULT_TASK_QUEUE = 'wrs-runs';

/**
 * The schedule's id: `wrs-retention` for the default task queue. A deployment on another task
 * queue (a second service sharing the namespace, each test's service) gets its own, so each
 * deployment's workers clean their own database.
 */
export function retentionScheduleId(taskQueue: string): string {
  return taskQueue === DEFAULT_TASK_QUEUE ? 'wrs-retention' : `wrs-retention-${taskQueue}`;
}

/** Creates the hourly retention schedule unless it exists; returns its id. */
export async function ensureRetentionSchedule(client: Client, taskQueue: string): Promise<string> {
  const scheduleId = retentionScheduleId(taskQueue);
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '1h' }] },
      action: {
        type: 'startWorkflow',
        workflowType: RETENTION_WORKFLOW_TYPE,
        taskQueue,
        args: [],
        staticSummary: 'retention (D29)',
      },
      // A clean-up still running when the next hour comes is not doubled; one missed while Temporal was down is not replayed.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1h' },
      state: {
        note: 'D29: removes runs, event logs, idempotency keys and files older than RETENTION_DAYS (ledger entries stay)',
      },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  return scheduleId;
}

/**
 * The activity the hourly retention workflow runs: removes runs and files older than RETENTION_DAYS
 * (D29), ends the runs an API process recorded and then stopped before starting (store/
 * never-started.ts: nobody may ever read them, and their record held their credit for good), then
 * gives back credit held for no run by API processes that stopped while starting runs (D17,
 * store/hold-sweep.ts): the service's hourly housekeeping, in the one activity the schedule
 * already runs.
 */
import { Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Db } from 'mongodb';
import type { Config } from '../config';
import { deleteFilesOlderThan } from '../store/files';
import {
  removeRunsOlderThan,
  type RemovedRuns,
  type RetentionCollections,
} from '../store/retention';
import { sweepHolds, type SweptHolds } from '../store/hold-sweep';
import { settleUnstartedRuns } from '../store/never-started';
import { heartbeating } from './heartbeat';

const DAY_MS = 86_400_000;
const DEFAULT_RETENTION_DAYS = 30;

export interface RetentionDeps {
  collections: RetentionCollections & Parameters<typeof sweepHolds>[0];
  /** The database of the GridFS `files` bucket; without it files are left (a worker without file storage). */
  db?: Db;
  config: Partial<Pick<Config, 'retention'>>;
  /** Whether Temporal has a run's workflow; by default asked through the activity's own client. */
  workflowExists?: (runId: string) => Promise<boolean>;
}

/** Builds the retention activity; the cutoff is taken from the worker's configuration at each call. */
export function createRetentionActivity(deps: RetentionDeps) {
  const exists = deps.workflowExists ?? workflowExists;
  return async function applyRetention(): Promise<
    RemovedRuns & { files: number; unstarted: number; holds: SweptHolds }
  > {
    const days = deps.config.retention?.days ?? DEFAULT_RETENTION_DAYS;
    const cutoff = new Date(Date.now() - days * DAY_MS);
    // Heartbeats keep a long first clean-up alive; a dead worker's attempt is retried elsewhere.
    // Each step runs whatever the one before did: a failure of the runs' removal kept expired
    // files and every tenant's stray holds until it mended. The first failure is thrown after all
    // four (the schedule's attempt is retried), the others logged.
    const result = await heartbeating(async () => {
      const failures: unknown[] = [];
      const step = <T>(work: () => Promise<T>, none: T): Promise<T> =>
        work().catch((err: unknown) => {
          failures.push(err);
          return none;
        });
      const runs = await step(() => removeRunsOlderThan(deps.collections, cutoff), NO_RUNS);
      const files = await step(
        async () => (deps.db ? deleteFilesOlderThan(deps.db, cutoff) : 0),
        0,
      );
      // Before the holds: a run it ends gives its hold back itself.
      const unstarted = await step(() => settleUnstartedRuns(deps.collections, exists), 0);
      const holds = await step(() => sweepHolds(deps.collections), undefined);
      for (const err of failures.slice(1))
        activityLog('warn', 'retention step failed', { error: String(err) });
      if (failures.length > 0) throw failures[0];
      return { ...runs, files, unstarted, holds: holds! };
    });
    activityLog('info', 'retention applied', { cutoff: cutoff.toISOString(), ...result });
    return result;
  };
}

/** Whether Temporal has the run's workflow, asked with the worker's own client. */
async function workflowExists(runId: string): Promise<boolean> {
  try {
    await Context.current().client.workflow.getHandle(runId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

const NO_RUNS: RemovedRuns = { runs: 0, idempotencyKeys: 0, webhookDeliveries: 0 };

/** The activity logger inside an activity; silent when called directly (tests, scripts). */
function activityLog(level: 'info' | 'warn', message: string, attrs: Record<string, unknown>) {
  try {
    log[level](message, attrs);
  } catch {
    // no activity context
  }
}

/**
 * The activity the hourly retention workflow runs: removes runs and files older than RETENTION_DAYS
 * (D29) and the chunks of file writes a crash cut short (once no write can still be under way),
 * ends the runs an API process recorded and then stopped before starting (store/never-started.ts:
 * nobody may ever read them, and their record held their credit for good), then gives back credit
 * held for no run by API processes that stopped while starting runs (D17, store/hold-sweep.ts):
 * the service's hourly housekeeping, in the one activity the schedule
 * already runs.
 */
import { Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Db } from 'mongodb';
import type { Config } from '../config';
import { deleteFilesOlderThan, deleteUnfinishedUploads } from '../store/files';
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

/** An upload's bound with API_REQUEST_TIMEOUT_MS off (0, behind a proxy that bounds it, docs/deploy.md). */
const UNBOUNDED_REQUEST_MS = DAY_MS;
/** What the store may take past the last byte's arrival: the last chunk and the files document. */
const STORE_SLACK_MS = 5 * 60_000;

/**
 * The longest a file write may take, from the config both API and worker read (docs/deploy.md):
 * an upload ends within the API's request timeout, a worker's copy of a URL or an answer within
 * FILE_FETCH_TIMEOUT_MS ("the whole download"); a node's output in memory at once. Chunks of a
 * write begun longer ago than this have no write left to finish them.
 */
export function fileWriteBoundMs(config: Pick<Config, 'api' | 'files'>): number {
  const { requestMs } = config.api.timeouts;
  return (
    Math.max(requestMs === 0 ? UNBOUNDED_REQUEST_MS : requestMs, config.files.fetchTimeoutMs) +
    STORE_SLACK_MS
  );
}

export interface RetentionDeps {
  collections: RetentionCollections & Parameters<typeof sweepHolds>[0];
  /** The database of the GridFS `files` bucket; without it files are left (a worker without file storage). */
  db?: Db;
  /** Without `api` and `files` (a worker without file storage) unfinished writes are left. */
  config: Partial<Pick<Config, 'retention' | 'api' | 'files'>>;
  /** The clock (tests move it past the bound of a write). */
  now?: () => number;
  /** Whether Temporal has a run's workflow; by default asked through the activity's own client. */
  workflowExists?: (runId: string) => Promise<boolean>;
}

/** Builds the retention activity; the cutoff is taken from the worker's configuration at each call. */
export function createRetentionActivity(deps: RetentionDeps) {
  const exists = deps.workflowExists ?? workflowExists;
  return async function applyRetention(): Promise<
    RemovedRuns & {
      files: number;
      unfinishedUploads: number;
      unstarted: number;
      holds: SweptHolds;
    }
  > {
    const days = deps.config.retention?.days ?? DEFAULT_RETENTION_DAYS;
    const now = deps.now?.() ?? Date.now();
    const cutoff = new Date(now - days * DAY_MS);
    const { api, files: filesConfig } = deps.config;
    const writesBefore =
      api && filesConfig && new Date(now - fileWriteBoundMs({ api, files: filesConfig }));
    // Heartbeats keep a long first clean-up alive; a dead worker's attempt is retried elsewhere.
    // Each step runs whatever the one before did: a failure of the runs' removal kept expired
    // files and every tenant's stray holds until it mended. The first failure is thrown after all
    // five (the schedule's attempt is retried), the others logged.
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
      // Once no write can be under way, not after RETENTION_DAYS: no quota counts such chunks.
      const unfinishedUploads = await step(
        async () => (deps.db && writesBefore ? deleteUnfinishedUploads(deps.db, writesBefore) : 0),
        0,
      );
      // Before the holds: a run it ends gives its hold back itself.
      const unstarted = await step(() => settleUnstartedRuns(deps.collections, exists, now), 0);
      const holds = await step(() => sweepHolds(deps.collections), undefined);
      for (const err of failures.slice(1))
        activityLog('warn', 'retention step failed', { error: String(err) });
      if (failures.length > 0) throw failures[0];
      return { ...runs, files, unfinishedUploads, unstarted, holds: holds! };
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

/**
 * The Temporal face of a run: workflow type names and arguments, the queries and the update the
 * API asks a run, and the search attributes operators filter by. The run model itself (status,
 * events, snapshot, final state) is domain/run.ts. Safe in the workflow sandbox and in Node.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { WorkflowDocument } from '../domain/graph';
import type { OutputPage, RunOptions, RunSnapshot, SnapshotOptions } from '../domain/run';

export const RUN_WORKFLOW_TYPE = 'runWorkflow';
/** D20: the workflow type of a run's webhook delivery (workflows/webhook-workflow.ts). */
export const WEBHOOK_WORKFLOW_TYPE = 'webhookWorkflow';
/** D29: the workflow the retention schedule starts every hour. */
export const RETENTION_WORKFLOW_TYPE = 'retentionWorkflow';

/**
 * D35: the task queue of a big node's blocks beside the run task queue `taskQueue`. Each worker
 * takes from it only as many blocks as it runs at once (WORKER_BLOCKS), so blocks past them wait
 * in Temporal, not in the activity slots every run's other work needs (worker/create-worker.ts).
 */
export function blockTaskQueue(taskQueue: string): string {
  return `${taskQueue}-blocks`;
}

/**
 * D20: the task queue of webhook deliveries beside the run task queue `taskQueue`. Each worker takes
 * from it only as many deliveries as WORKER_WEBHOOK_DELIVERIES, so receivers that hold their
 * connections (a tenant's own, up to WEBHOOK_TIMEOUT_MS an attempt, retried for 24 h) tie up those
 * slots and never the activity slots every run's work needs (worker/create-worker.ts).
 */
export function webhookTaskQueue(taskQueue: string): string {
  return `${taskQueue}-webhooks`;
}

/**
 * The heartbeat timeout of node activities (D10): an attempt not heard from for this long is
 * taken for dead. Its attempts heartbeat every second (worker/create-worker.ts throttles them to
 * 1 s), and a cancel, or the NotFound of a closed workflow, reaches them in a heartbeat's answer.
 */
export const NODE_HEARTBEAT_TIMEOUT_MS = 10_000;

/** Search attributes shown and filterable in the Temporal UI. */
export const SEARCH_ATTRIBUTES = {
  accountId: defineSearchAttributeKey('WrsAccountId', SearchAttributeType.KEYWORD),
  publishedWorkflowId: defineSearchAttributeKey(
    'WrsPublishedWorkflowId',
    SearchAttributeType.KEYWORD,
  ),
  workflowVersion: defineSearchAttributeKey('WrsWorkflowVersion', SearchAttributeType.INT),
} as const;

/** Name → Temporal type, for registering the search attributes on a server. */
export const SEARCH_ATTRIBUTE_TYPES = {
  WrsAccountId: 'Keyword',
  WrsPublishedWorkflowId: 'Keyword',
  WrsWorkflowVersion: 'Int',
} as const;

export interface RunArgs {
  runId: string;
  accountId: string;
  publishedWorkflowId: string;
  versionId: string;
  version: number;
  /** Unix milliseconds the API accepted the run; the source of `created_at` everywhere. */
  createdAtMs: number;
  graph: WorkflowDocument;
  /** Validated inputs keyed by normalized label (D4). */
  inputs: Record<string, unknown>;
  options: RunOptions;
  /** D20: where the run record is POSTed once the run has ended. */
  webhook?: string;
  /**
   * D17: the credit held for the run at its start, as on its record (`hold_usd`; 0: none). The
   * run's end hands it to finalize (RunFinal.holdUsd), which then needs no read of the record.
   * Absent from runs started before it was passed: their finalize reads the record, as before.
   */
  holdUsd?: number;
  /**
   * D38: a re-run of the failed items of run `parentRunId`: the workflow carries the parent's
   * completed items over (workflows/carry-over.ts). A reference only, never the items themselves.
   */
  rerun?: { parentRunId: string };
}

/** D20: the arguments of the child workflow that delivers one run's webhook. */
/** D20: the first retry delay of a delivery whose run carried none (runs started before WEBHOOK_RETRY_INITIAL_MS). */
export const DEFAULT_WEBHOOK_RETRY_INITIAL_MS = 5_000;

export interface WebhookArgs {
  runId: string;
  accountId: string;
  url: string;
  /** First retry delay; doubling up to an hour, for 24 h in all. */
  retryInitialMs: number;
}

/** The workflow id of a run's webhook delivery: one per run, so a replayed start cannot deliver twice. */
export function webhookWorkflowId(runId: string): string {
  return `${runId}-webhook`;
}

/**
 * The one query of a run: its snapshot, with the events after `afterSequence` (-1 for all),
 * compact when asked (D35). The options came later: workflow code from before them answers
 * `events` whatever is asked, so a reader takes either.
 */
export const snapshotQuery = defineQuery<RunSnapshot, [number, SnapshotOptions?]>('snapshot');

/** D31: a page of one result's items while the run is live: (normalized label, after item id or null, limit). */
export const outputPageQuery = defineQuery<OutputPage | null, [string, string | null, number]>(
  'outputPage',
);

/**
 * Completes the moment the run ends, before its record is written, with the terminal snapshot
 * whose `events` are the log's last END_TAIL_EVENTS: D28 `Prefer: wait` answers from it, and a
 * stream's poller learns the end from it at once instead of on its next tick (D15).
 */
export const awaitEndUpdate = defineUpdate<RunSnapshot, []>('awaitEnd');

/**
 * The contract between the API, the workflow and the worker: workflow arguments, the query
 * that reports a run's state, the event shapes of the run's event log, and the search
 * attributes operators filter by. Safe to import from the workflow sandbox and from Node.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { WorkflowDocument } from '../domain/graph';
import type { ItemError, Part } from '../domain/parts';
import type { RunOptions } from '../config';

export const RUN_WORKFLOW_TYPE = 'runWorkflow';
/** D29: the workflow the retention schedule starts every hour. */
export const RETENTION_WORKFLOW_TYPE = 'retentionWorkflow';

/** Search attributes shown and filterable in the Temporal UI (issue 2, item 9). */
export const SEARCH_ATTRIBUTES = {
  accountId: defineSearchAttributeKey('WrsAccountId', SearchAttributeType.KEYWORD),
  publishedWorkflowId: defineSearchAttributeKey('WrsPublishedWorkflowId', SearchAttributeType.KEYWORD),
  workflowVersion: defineSearchAttributeKey('WrsWorkflowVersion', SearchAttributeType.INT),
} as const;

/** Name → Temporal type, for registering the search attributes on a server. */
export const SEARCH_ATTRIBUTE_TYPES = {
  WrsAccountId: 'Keyword',
  WrsPublishedWorkflowId: 'Keyword',
  WrsWorkflowVersion: 'Int',
} as const;

export type RunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

/** Is this status final (D7: nothing leaves a terminal state)? */
export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

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
}

/** D20: the arguments of the child workflow that delivers one run's webhook. */
export interface WebhookArgs {
  runId: string;
  accountId: string;
  url: string;
  /** First retry delay; doubling up to an hour, for 24 h in all. */
  retryInitialMs: number;
}

/** D20: the `webhook-id` of a run's delivery, the same for every attempt so receivers can dedupe. */
export function webhookMessageId(runId: string): string {
  return `msg_${runId.slice(runId.indexOf('_') + 1)}`;
}

/** The workflow id of a run's webhook delivery: one per run, so a replayed start cannot deliver twice. */
export function webhookWorkflowId(runId: string): string {
  return `${runId}-webhook`;
}

/** One output item of the run record (spec "Output item"). */
export interface OutputItem {
  id: string;
  item_index: number;
  status: 'completed' | 'failed' | 'pending' | 'running';
  parts: Part[];
  error?: ItemError;
}

export type RunOutput = Record<string, OutputItem[]>;

interface EventBase {
  sequence_number: number;
}
export interface ItemEventBody {
  output_index: number;
  item: { type: 'message'; id: string; phase: 'final_answer' };
}
/** Events of a run's log (spec "Events", D11–D14). `response.resumed` is per connection and lives in the API. */
export type RunEvent = EventBase &
  (
    | {
        type: 'response.created';
        response: { id: string; run_id: string; created_at: number; workflow_id: string; service_tier: null };
      }
    | ({ type: 'response.output_item.added' } & ItemEventBody)
    | ({ type: 'response.output_item.done' } & ItemEventBody)
    | { type: 'response.completed'; response: { usage: null; service_tier: null } }
    | {
        type: 'response.failed';
        response: {
          error: { code: null; message: string };
          incomplete_details: { reason: 'error' };
          usage: null;
          service_tier: null;
        };
      }
    | { type: 'response.cancelled'; response: { usage: null; service_tier: null } }
  );

/** The first event of a reattached stream (per connection, not in the log); its number is the client's cursor. */
export interface ResumedEvent extends EventBase {
  type: 'response.resumed';
  response: { id: string; run_id: string; status: RunStatus };
}

/** Everything a stream may carry. */
export type StreamEvent = RunEvent | ResumedEvent;

/** What the `snapshot` query answers: status always, events after a sequence number, results once terminal. */
export interface RunSnapshot {
  status: RunStatus;
  /** Events with sequence_number greater than the query argument. */
  events: RunEvent[];
  /** Number of events in the log so far; `events` holds at most SNAPSHOT_EVENTS of them (ask again after the last). */
  eventCount: number;
  /** Once completed; null with `outputDeferred` when too large for a query answer (read it from the record). */
  output: RunOutput | null;
  outputDeferred?: boolean;
  error: string | null;
  total_cost: number;
  completed_at_ms: number | null;
}

/** The final state the workflow hands to persistence, exactly once per run. */
export interface RunFinal {
  runId: string;
  accountId: string;
  status: 'completed' | 'failed' | 'cancelled';
  output: RunOutput | null;
  error: string | null;
  totalCost: number;
  completedAtMs: number;
  events: RunEvent[];
  /** How many RunChunks (workflows/run-chunks.ts) were stored before this record; 0: events and output are all here. */
  chunks?: number;
  /** The id of output item 0; the others follow it (domain/ids.ts idAtOffset), so chunks store item events without ids. */
  itemIdBase?: string;
}

/** D31: one page of one result's items, answered by a live run (`outputPage` query). */
export interface OutputPage {
  items: OutputItem[];
  has_more: boolean;
  /** The `starting_after` item is not (yet) one of this result's items. */
  unknown_cursor?: boolean;
}

/**
 * Bounds of one snapshot answer, which travels as a single gRPC message (4 MB): a 10,000-row run
 * has ~20,000 events, so a stream catching up gets them in pages.
 */
export const SNAPSHOT_EVENTS = 5_000;
export const SNAPSHOT_OUTPUT_BYTES = 1024 * 1024;

/** The one query of a run: its snapshot, with the events after `afterSequence` (-1 for all). */
export const snapshotQuery = defineQuery<RunSnapshot, [number]>('snapshot');

/** D31: a page of one result's items while the run is live: (normalized label, after item id or null, limit). */
export const outputPageQuery = defineQuery<OutputPage | null, [string, string | null, number]>('outputPage');

/**
 * D28 `Prefer: wait`: completes with the terminal snapshot (no events) the moment the run ends,
 * before its record is written: one round trip instead of waiting for the workflow to close.
 */
export const awaitEndUpdate = defineUpdate<RunSnapshot, []>('awaitEnd');

/** The terminal event of a failed run (spec "Events"). */
export function failedEvent(sequenceNumber: number, message: string): RunEvent {
  return {
    type: 'response.failed',
    sequence_number: sequenceNumber,
    response: { error: { code: null, message }, incomplete_details: { reason: 'error' }, usage: null, service_tier: null },
  };
}

/** The `response.created` event, built the same way by the workflow (log entry 0) and the API (before a worker runs). */
export function createdEvent(args: Pick<RunArgs, 'runId' | 'createdAtMs' | 'publishedWorkflowId'>): RunEvent {
  return {
    type: 'response.created',
    sequence_number: 0,
    response: {
      id: args.runId, // D12: response.id is the run id
      run_id: args.runId,
      created_at: Math.floor(args.createdAtMs / 1000), // D12: Unix seconds
      workflow_id: args.publishedWorkflowId,
      service_tier: null,
    },
  };
}

/**
 * The run model every side shares: a run's status and its lifecycle, the events of its log,
 * its output items, the snapshot a live run answers and the final state it is stored with.
 * Pure types and functions: safe in the workflow sandbox, the API, the worker and the client.
 */
import type { ItemError, Part } from './parts';
import type { StoredOutput } from './item-blocks';
import type { RunEvent } from './run-events';
import type { RunUsage } from './run-usage';

export type RunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

/** Is this status final (D7: nothing leaves a terminal state)? */
export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** The event types that end a run's log (spec "Events"): exactly one of them, always last. */
export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set([
  'response.completed',
  'response.failed',
  'response.cancelled',
]);

/** Is this the event that ends the log? */
export function isTerminalEvent(event: { type: string }): boolean {
  return TERMINAL_EVENT_TYPES.has(event.type);
}

/** Options every run carries in its workflow arguments, so the worker needs no API config (and operators see them). */
export interface RunOptions {
  concurrency: number;
  /** The most a workflow's own `concurrency` may ask for. Absent in runs started before it existed. */
  maxConcurrency?: number;
  startFeeUsd: number;
  runTimeoutMs: number;
  /** D36: the caller's `timeout_seconds` (then `runTimeoutMs` is it in ms), named in the error. Absent: the operator's limit. */
  timeoutSeconds?: number;
  /**
   * D36: the caller's `max_cost` and what one call of each priced node is budgeted at (its worst
   * case as the start knows it, domain/run-hold.ts callBudgets). Absent: no cap (and runs before D36).
   */
  costCap?: { maxUsd: number; perCallUsd: Record<string, number> };
  /**
   * D17: the same per-call budgets for a run without `max_cost`: it spends within its hold, which
   * grows from the account's available credit as it needs (workflows/cost-cap.ts CreditSource).
   * Absent: a run with `max_cost`, a graph without a priced node, runs started before.
   */
  creditCap?: { perCallUsd: Record<string, number> };
  nodeAttemptTimeoutMs: number;
  nodeMaxAttempts: number;
  retryInitialMs: number;
  /** D20: first retry delay of a webhook delivery (doubling, for 24 h). Absent in runs started before webhooks existed. */
  webhookRetryInitialMs?: number;
}

/** D17: a run's `grant`-th request for more hold, of up to `wantUsd` (activities/credit.ts). */
export interface HoldExtension {
  runId: string;
  accountId: string;
  grant: number;
  wantUsd: number;
}

/** D20: how long after its run ended a webhook delivery is retried before it is given up. */
export const WEBHOOK_DELIVERY_WINDOW_MS = 24 * 3_600_000;

/** D20: the `webhook-id` of a run's delivery, the same for every attempt so receivers can dedupe. */
export function webhookMessageId(runId: string): string {
  return `msg_${runId.slice(runId.indexOf('_') + 1)}`;
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

// The stream's events are defined once, as the zod schema of domain/run-events.ts.
export type { ItemEventBody, ResumedEvent, RunEvent, StreamEvent } from './run-events';

/** What the `snapshot` query answers: status always, events after a sequence number, results once terminal. */
export interface RunSnapshot {
  status: RunStatus;
  /** Events with sequence_number greater than the query argument. */
  events: RunEvent[];
  /** Number of events in the log so far; `events` holds at most SNAPSHOT_EVENTS of them (ask again after the last). */
  eventCount: number;
  /**
   * D35: the events after the sequence when the query asked for them compact (SnapshotOptions);
   * `events` is then empty. Workflow code from before the option answers `events` instead.
   */
  compact?: CompactEvents;
  /** Once completed; null with `outputDeferred` when too large for a query answer (read it from the record). */
  output: RunOutput | null;
  outputDeferred?: boolean;
  error: string | null;
  total_cost: number;
  completed_at_ms: number | null;
  /** D36: what the run used so far; absent from runs of workflow code before D36. */
  usage?: RunUsage;
  /** What the run keeps if it ends now, when asked (SnapshotOptions.ending); absent from workflow code before it. */
  ending?: RunEnding;
}

/**
 * What a run holds if it ends where it stands, for the API's settle of a run whose workflow was
 * closed from outside (api/runs/settle-run.ts), which writes it as the run's own end would have
 * (D35, D38): the items it finished, at their rows, and the blocks it was still waiting for.
 */
export interface RunEnding {
  /**
   * Results whose items the run holds itself, by label: how many of them finished (read with the
   * `outputPage` query, where a finished item's `item_index` is its row).
   */
  held: Record<string, number>;
  /** D35: results whose items are in the store. */
  storedOutputs?: Record<string, StoredOutput>;
  /** D35: blocks of a big node that started and whose activity had not answered (what they stored is in their pages). */
  blocksInFlight: BlockInFlight[];
  /** D36: the run's `max_cost`: it is never billed past it. */
  maxCostUsd?: number;
  /**
   * The run ended (its end could not be written) numbering its kept items from 0, as runs before
   * patch `kept-items-at-rows` did: `outputPage` numbers them so, not by row.
   */
  renumbered?: true;
}

/** A block of rows [first, first + count) of node `node` whose activity has not answered; `io`: an I/O node (its usage counts, D36). */
export interface BlockInFlight {
  node: string;
  first: number;
  count: number;
  io: boolean;
}

/** The `snapshot` query's options, its second argument (workflow code from before it ignores it). */
export interface SnapshotOptions {
  /** D35: the events as CompactEvents, so a big run's log comes in a few answers instead of one per SNAPSHOT_EVENTS. */
  compact?: boolean;
  /** With the answer's `ending` (RunEnding): what a settle of the closed run needs besides its count. */
  ending?: boolean;
}

/**
 * Events of a log from `from` on, in order: whole events, and runs of item events as the text
 * of their tokens (domain/run-log.ts codeToken). A block's rows are one token, so a finished
 * 1,000,000-row run's two million item events fit one answer (a settle replays its history once
 * per answer).
 */
export interface CompactEvents {
  from: number;
  /** The id of output item 0: the item events' ids follow from it (domain/ids.ts idAtOffset). */
  itemIdBase: string;
  pieces: Array<RunEvent | string>;
}

/** The final state the workflow hands to persistence, exactly once per run. */
export interface RunFinal {
  runId: string;
  accountId: string;
  status: 'completed' | 'failed' | 'cancelled';
  output: RunOutput | null;
  error: string | null;
  /**
   * D38: a run that did not complete whose kept items' `item_index` is their row (a re-run may
   * carry them); absent from such runs before patch `kept-items-at-rows`, whose kept items were
   * numbered from 0. A completed run's always are.
   */
  itemsAtRows?: boolean;
  totalCost: number;
  completedAtMs: number;
  events: RunEvent[];
  /** How many RunChunks (domain/run-chunks.ts) were stored before this record; 0: events and output are all here. */
  chunks?: number;
  /** The id of output item 0; the others follow it (domain/ids.ts idAtOffset), so chunks store item events without ids. */
  itemIdBase?: string;
  /**
   * D35: with `events` holding only the first and last event, the item events between as numbers
   * (`output_index × 2 + done`), for domain/run-chunks.ts splitFinal; never stored as such.
   */
  itemCodes?: number[];
  /** D35: outputs whose items are in the store (domain/item-blocks.ts), by label; `output` lists them empty. */
  storedOutputs?: Record<string, StoredOutput>;
  /** D36: what the run used; absent from runs of workflow code before D36 (and from a settle without news). */
  usage?: RunUsage;
  /**
   * D17: the credit held for the run at its start, as the API recorded it (the workflow's start
   * argument `holdUsd`); absent (a run started before, the API's settle): read from the record.
   */
  holdUsd?: number;
}

/** D31: one page of one result's items, answered by a live run (`outputPage` query). */
export interface OutputPage {
  items: OutputItem[];
  has_more: boolean;
  /** The `starting_after` item is not (yet) one of this result's items. */
  unknown_cursor?: boolean;
  /** D35: the result's items are in the store: read them there (rows not written yet are running). */
  stored?: StoredOutput;
  /** With `stored`: the id of the run's output item 0 (domain/ids.ts idAtOffset). */
  itemIdBase?: string;
  /** The run has ended, its record not written yet: rows not finished never will be (left out, D8). */
  ended?: boolean;
}

/**
 * Bounds of one snapshot answer, which travels as a single gRPC message (4 MB): a 10,000-row run
 * has ~20,000 events, so a stream catching up gets them in pages.
 */
export const SNAPSHOT_EVENTS = 5_000;
/** Bound of a compact answer's item-event tokens, in characters (the whole events in it stay within SNAPSHOT_EVENTS). */
export const SNAPSHOT_TOKEN_CHARS = 512 * 1024;
export const SNAPSHOT_OUTPUT_BYTES = 1024 * 1024;
/**
 * Events at the end of the log that the `awaitEnd` update answers with: the last step's events
 * and the terminal one, so a stream that had the rest delivers the end at once (api/stream).
 */
export const END_TAIL_EVENTS = 16;

/** The terminal event of a failed run (spec "Events"). */
export function failedEvent(sequenceNumber: number, message: string): RunEvent {
  return {
    type: 'response.failed',
    sequence_number: sequenceNumber,
    response: {
      error: { code: null, message },
      incomplete_details: { reason: 'error' },
      usage: null,
      service_tier: null,
    },
  };
}

/** The `response.created` event, built the same way by the workflow (log entry 0) and the API (before a worker runs). */
export function createdEvent(args: {
  runId: string;
  createdAtMs: number;
  publishedWorkflowId: string;
}): RunEvent {
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

/**
 * One chunk of an I/O node's rows (D31): runs `concurrency` rows at a time inside one activity,
 * so a 100,000-row run needs a few hundred activities instead of 100,000.
 *
 * Every second the chunk heartbeats a checkpoint: the rows it finished (items and cost) and the
 * checkpoints of rows in flight (a model node's prediction id). A retried attempt (the worker was
 * killed, a provider failed for a while) starts from that checkpoint, so it never calls the
 * provider again for a finished row; the run is billed for the rows of the answer only, so a row
 * is billed once however often its call was made.
 *
 * A row's outcome: items (done); a provider's refusal (a failed item in place, D9); an invalid
 * node (the whole chunk fails at once, non-retryable); anything transient (no new rows start,
 * the rows in flight finish and are checkpointed, then the attempt fails so Temporal retries it
 * with backoff). A cancel (D8) aborts the calls in flight and answers with the finished rows,
 * so what ran is billed and nothing else.
 *
 * D36 `provider_calls` counts every call made: each attempt of a row that sends its request is
 * counted as it sends (`RowCalls`), checkpointed with the row, and the calls before the one that
 * ends the row count in its usage (`failed_calls`). What the answer's rows do not count (the calls
 * of rows left unfinished; when the node gives up, everything the chunk made, whose rows are lost)
 * travels as `uncounted`: in the answer, in the failure's details, and in the checkpoint, which a
 * timeout hands to the workflow. Missed: a call sent after the last heartbeat (at most a second)
 * of an attempt cut off by its timeout or its worker's death, and the calls of a unit cancelled
 * while it waits for its next attempt (Temporal gives the workflow no checkpoint then).
 */
import { setMaxListeners } from 'node:events';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { Item } from '../domain/parts';
import { boundedTextItem, INLINE_ROW_MAX_BYTES, withinRowBound } from '../domain/item-blocks';
import { failed } from '../domain/items';
import { callsMade, type CallUsage } from '../domain/run-usage';
import { STORAGE_QUOTA_EXCEEDED } from './files';
import { HEARTBEAT_EVERY_MS, inRow, type RowScope } from './heartbeat';
import { TEMPLATE_TOO_LARGE } from './node-inputs';
import { remadeFailure } from './failures';
import { withAskedDelay } from './row-retries';
import { cancelledByShutdown, handBack } from './shutdown';
import type {
  BlockNode,
  IoNodeType,
  NodeChunkRequest,
  NodeChunkResult,
  NodeRequest,
  NodeResult,
  NodeRow,
  RowResult,
} from './types';

/** JSON bytes of a chunk's answer (and of its heartbeat) at most before it stops taking rows: well under Temporal's 2 MB. */
export const MAX_CHUNK_RESULT_BYTES = 768 * 1024;

/** The single-row executors of each I/O node type. */
export type RowExecutors = { [T in IoNodeType]: (req: NodeRequest<T>) => Promise<NodeResult> };

/** What a chunk heartbeats, and what its next attempt starts from. */
interface ChunkCheckpoint {
  rows: RowResult[];
  /** Checkpoints of rows in flight, by row index. */
  pending: Record<string, unknown>;
  /** D36: calls made for unfinished rows, by row index (absent when none, and in checkpoints before). */
  calls?: Record<string, number>;
  /** D36: what the chunk made so far, rows finished and not: what a timeout that ends the node leaves uncounted. */
  uncounted?: CallUsage;
}

/** Builds the activity that runs a chunk of one node's rows. */
export function createNodeChunkActivity(executors: RowExecutors) {
  return async function runNodeChunk(req: NodeChunkRequest): Promise<NodeChunkResult> {
    const context = Context.current();
    const saved = context.info.heartbeatDetails as ChunkCheckpoint | undefined;
    const finished = new Map<number, RowResult>((saved?.rows ?? []).map((row) => [row.index, row]));
    const pending = new Map<number, unknown>(
      Object.entries(saved?.pending ?? {}).map(([index, details]) => [Number(index), details]),
    );
    const rowCalls = new RowCalls(saved?.calls);
    const queue = req.rows.filter((row) => !finished.has(row.index));
    const rowMax = req.rowMaxBytes ?? INLINE_ROW_MAX_BYTES;
    let bytes = JSON.stringify([...finished.values()]).length;
    let stopped: unknown;
    const signal = context.cancellationSignal;
    // Every row in flight listens for the cancel (its provider call's abort): one listener a row is expected.
    setMaxListeners(0, signal);

    const record = (
      index: number,
      items: Item[],
      costUsd: number,
      last: CallUsage,
      sent: boolean,
    ): void => {
      const row = { index, items, costUsd, usage: rowCalls.endRow(index, last, sent) };
      finished.set(index, row);
      pending.delete(index);
      bytes += JSON.stringify(row).length + 1;
    };
    // D36: everything the chunk made, for a failure that ends the node (its rows are not reported).
    const made = () => rowCalls.withRows([...finished.values()].map((row) => row.usage));
    const beat = () =>
      context.heartbeat({
        rows: [...finished.values()],
        pending: Object.fromEntries(pending),
        ...(rowCalls.size > 0 && { calls: rowCalls.checkpoint() }),
        uncounted: made(),
      } satisfies ChunkCheckpoint);

    const lane = async (): Promise<void> => {
      for (;;) {
        if (stopped !== undefined || signal.aborted || bytes >= MAX_CHUNK_RESULT_BYTES) return;
        const row = queue.shift();
        if (!row) return;
        const scope = rowScope(pending, rowCalls, row.index);
        try {
          const result = await inRow(scope, () => executeRow(executors, req, row, rowMax));
          const items = withinRowBound(result.items, rowMax);
          record(row.index, items, result.costUsd, callUsage(result), scope.wasSent());
        } catch (err) {
          if (signal.aborted) return; // cancelled: the row stays unfinished and unbilled
          const refused = refusal(err);
          if (refused) record(row.index, [refused.item], 0, refused.usage, scope.wasSent());
          else stopped ??= err;
        }
      }
    };

    beat();
    const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
    try {
      await Promise.all(
        Array.from({ length: Math.max(1, Math.min(req.concurrency, queue.length)) }, lane),
      );
    } finally {
      clearInterval(timer);
    }
    const rows = [...finished.values()];
    if (cancelledByShutdown(context)) {
      beat(); // the next attempt, on another worker, starts from the rows finished here
      throw handBack();
    }
    // D36: the calls of rows this answer leaves unfinished (a cancel, the size budget).
    const uncounted = uncountedField(rowCalls.withRows([]));
    if (signal.aborted) return { rows, cancelled: true, ...uncounted };
    if (stopped !== undefined) {
      beat(); // the next attempt starts from every row finished so far
      // The provider's Retry-After, when longer than the backoff, is the wait before the next attempt.
      throw withAskedDelay(withUncounted(stopped, made()), context.info);
    }
    return { rows, ...uncounted };
  };
}

/**
 * A row's checkpoint scope (activities/heartbeat.ts) in a unit whose rows' checkpoints are
 * `pending`; D36: its attempt counts once in `calls` when it sends (`wasSent` says whether it did).
 */
export function rowScope(
  pending: Map<number, unknown>,
  calls: RowCalls,
  index: number,
): RowScope & { wasSent(): boolean } {
  let sent = false;
  return {
    resumed: pending.get(index),
    checkpoint: (details: unknown) => pending.set(index, details),
    sent: () => {
      if (!sent) calls.add(index);
      sent = true;
    },
    wasSent: () => sent,
  };
}

/**
 * D36: the calls made for a unit's rows that have not ended, by row index: an attempt of a row
 * counts once when it sends (a model row's polls are the same call). When the row ends, the
 * calls before the one that ended it are its `failed_calls`. Kept in the unit's checkpoint, so
 * they survive Temporal's retries of the unit.
 */
export class RowCalls {
  private readonly byRow: Map<number, number>;

  constructor(saved: Record<string, number> | undefined) {
    this.byRow = new Map(
      Object.entries(saved ?? {})
        .map(([index, n]): [number, number] => [Number(index), n])
        .filter(([index, n]) => Number.isSafeInteger(index) && Number.isSafeInteger(n) && n > 0),
    );
  }

  get size(): number {
    return this.byRow.size;
  }

  /** The calls made for the row so far (not yet counted in its usage). */
  of(index: number): number {
    return this.byRow.get(index) ?? 0;
  }

  /** An attempt of the row sends its call. */
  add(index: number): void {
    this.byRow.set(index, (this.byRow.get(index) ?? 0) + 1);
  }

  /** The usage of a row that ends with `last` (whose call was sent now, or not): with its failed calls. */
  usageOf(index: number, last: CallUsage, sent: boolean): CallUsage {
    const failed = (this.byRow.get(index) ?? 0) - (sent ? 1 : 0);
    return failed > 0 ? { ...last, failed_calls: (last.failed_calls ?? 0) + failed } : last;
  }

  /** The row ended: its usage (`usageOf`), which counts its calls from now on. */
  endRow(index: number, last: CallUsage, sent: boolean): CallUsage {
    const usage = this.usageOf(index, last, sent);
    this.byRow.delete(index);
    return usage;
  }

  /** Drops the rows for which `counted` holds (their usage counts their calls already). */
  forget(counted: (index: number) => boolean): void {
    for (const index of this.byRow.keys()) if (counted(index)) this.byRow.delete(index);
  }

  checkpoint(): Record<string, number> {
    return Object.fromEntries(this.byRow);
  }

  /** The usage of `rows` and the calls of the rows not ended (those `only` keeps), summed. */
  withRows(rows: Array<CallUsage | undefined>, only?: (index: number) => boolean): CallUsage {
    const sum = { calls: 0, input_tokens: 0, output_tokens: 0, failed_calls: 0 };
    for (const usage of rows) {
      if (!usage) continue;
      sum.calls += usage.calls;
      sum.input_tokens += usage.input_tokens;
      sum.output_tokens += usage.output_tokens;
      sum.failed_calls += usage.failed_calls ?? 0;
    }
    for (const [index, n] of this.byRow) if (!only || only(index)) sum.failed_calls += n;
    return sum;
  }
}

/** D36: an answer's `uncounted`, when it counts any call (absent otherwise). */
export function uncountedField(uncounted: CallUsage | undefined): { uncounted?: CallUsage } {
  return uncounted && callsMade(uncounted) > 0 ? { uncounted } : {};
}

/**
 * D36: a unit's failure carrying what it made that no answer counts (`{ uncounted }`, the last
 * of its details): if the node gives up, the workflow counts it (domain/run-usage.ts uncountedIn).
 * The failure is otherwise the same: message, type, retryable or not.
 */
export function withUncounted(err: unknown, uncounted: CallUsage): unknown {
  if (callsMade(uncounted) === 0 || err instanceof CancelledFailure) return err;
  const details = err instanceof ApplicationFailure ? (err.details ?? []) : [];
  return remadeFailure(err, { details: [...details, { uncounted }] });
}

/** D36: what one provider call used (a refused call: the call, no tokens). */
export function callUsage(result?: NodeResult): CallUsage {
  return {
    calls: 1,
    input_tokens: result?.tokens?.input ?? 0,
    output_tokens: result?.tokens?.output ?? 0,
  };
}

/** Runs one row of a node with the executor of its type (a `text` node's needs none). */
export function executeRow(
  executors: RowExecutors,
  req: Pick<NodeChunkRequest, 'runId' | 'accountId'> & { node: BlockNode; priorityKey?: number },
  row: NodeRow,
  rowMaxBytes: number,
): Promise<NodeResult> {
  const base = {
    runId: req.runId,
    accountId: req.accountId,
    iteration: row.index,
    ports: row.ports,
    rowMaxBytes,
    priorityKey: req.priorityKey,
  };
  const { node } = req;
  switch (node.type) {
    case 'llm':
      return executors.llm({ ...base, node });
    case 'http_request':
      return executors.http_request({ ...base, node });
    case 'image_generation':
      return executors.image_generation({ ...base, node });
    case 'model':
      return executors.model({ ...base, node });
    case 'text': // D35: a text node of a big or stored list fills its template in blocks, at no cost
      return Promise.resolve({
        items: [boundedTextItem(node, row.ports, rowMaxBytes)],
        costUsd: 0,
      });
  }
}

/**
 * A provider's refusal of one item (non-retryable `ProviderRejected`) becomes that item, failed in
 * place (D9), and counts its call; so does a file the account's storage quota has no room for (D19,
 * `StorageQuotaExceeded`): a re-run of the failed items retries them once room is made (D38). A
 * row whose templates fill past their bound (`TemplateTooLarge`) fails in place having made no call.
 */
export function refusal(err: unknown): { item: Item; usage: CallUsage } | undefined {
  if (!(err instanceof ApplicationFailure)) return undefined;
  const called = (item: Item) => ({ item, usage: callUsage() });
  if (err.type === TEMPLATE_TOO_LARGE)
    return {
      item: failed({ message: err.message, type: 'template_too_large' }),
      usage: { calls: 0, input_tokens: 0, output_tokens: 0 },
    };
  if (err.type === STORAGE_QUOTA_EXCEEDED)
    return called(failed({ message: err.message, type: 'storage_quota_exceeded' }));
  if (err.type !== 'ProviderRejected') return undefined;
  const status = (err.details?.[0] as { status?: number } | undefined)?.status;
  return called(
    failed({ message: err.message, type: 'provider_error', ...(status ? { code: status } : {}) }),
  );
}

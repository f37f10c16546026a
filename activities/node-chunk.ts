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
 */
import { setMaxListeners } from 'node:events';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Item } from '../domain/parts';
import { boundedTextItem, INLINE_ROW_MAX_BYTES, withinRowBound } from '../domain/item-blocks';
import { failed } from '../domain/items';
import type { CallUsage } from '../domain/run-usage';
import { STORAGE_QUOTA_EXCEEDED } from './files';
import { HEARTBEAT_EVERY_MS, inRow } from './heartbeat';
import { TEMPLATE_TOO_LARGE } from './node-inputs';
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
    const queue = req.rows.filter((row) => !finished.has(row.index));
    const rowMax = req.rowMaxBytes ?? INLINE_ROW_MAX_BYTES;
    let bytes = JSON.stringify([...finished.values()]).length;
    let stopped: unknown;
    const signal = context.cancellationSignal;
    // Every row in flight listens for the cancel (its provider call's abort): one listener a row is expected.
    setMaxListeners(0, signal);

    const record = (index: number, items: Item[], costUsd: number, usage: CallUsage): void => {
      const row = { index, items, costUsd, usage };
      finished.set(index, row);
      pending.delete(index);
      bytes += JSON.stringify(row).length + 1;
    };
    const beat = () =>
      context.heartbeat({
        rows: [...finished.values()],
        pending: Object.fromEntries(pending),
      } satisfies ChunkCheckpoint);

    const lane = async (): Promise<void> => {
      for (;;) {
        if (stopped !== undefined || signal.aborted || bytes >= MAX_CHUNK_RESULT_BYTES) return;
        const row = queue.shift();
        if (!row) return;
        try {
          const scope = {
            resumed: pending.get(row.index),
            checkpoint: (details: unknown) => pending.set(row.index, details),
          };
          const result = await inRow(scope, () => executeRow(executors, req, row, rowMax));
          record(
            row.index,
            withinRowBound(result.items, rowMax),
            result.costUsd,
            callUsage(result),
          );
        } catch (err) {
          if (signal.aborted) return; // cancelled: the row stays unfinished and unbilled
          const refused = refusal(err);
          if (refused) record(row.index, [refused.item], 0, refused.usage);
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
    if (signal.aborted) return { rows, cancelled: true };
    if (stopped !== undefined) {
      beat(); // the next attempt starts from every row finished so far
      throw stopped;
    }
    return { rows };
  };
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

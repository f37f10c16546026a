/**
 * D36: what a block's answer adds to an earlier answer of the same block. A block that `max_cost`
 * shrank runs again for the rows it left (patch `cost-cap-shrunk-blocks`), and each of its answers
 * counts every stored row of the block (activities/node-block.ts tally: cost, usage, rows done,
 * whichever attempt ran them), so the run counts only what the later answer has more.
 * Deterministic: plain arithmetic on what the activities answered.
 */
import type { NodeBlockResult } from '../activities/types';
import { toRanges } from '../domain/item-blocks';
import type { BlockUsage } from '../domain/run-usage';

/** The rows an answer of the block [first, first + count) says are finished. */
export function finishedRows(result: NodeBlockResult, first: number, count: number): number[] {
  if (result.done === 0) return [];
  if (result.ranges.length === 0) return Array.from({ length: count }, (_, k) => first + k);
  return result.ranges.flatMap(([from, to]) =>
    Array.from({ length: to - from }, (_, k) => from + k),
  );
}

/** `after` less what `before` (an earlier answer of the same block, already counted) counted. */
export function answerSince(
  before: NodeBlockResult | undefined,
  after: NodeBlockResult,
  first: number,
  count: number,
): NodeBlockResult {
  if (!before) return after;
  const counted = new Set(finishedRows(before, first, count));
  const added = finishedRows(after, first, count).filter((row) => !counted.has(row));
  const failedBefore = new Set(before.failed ?? []);
  return {
    done: added.length,
    // All of them new: the whole block, as an answer says it (no ranges).
    ranges: added.length === count ? [] : toRanges(added),
    costUsd: after.costUsd - before.costUsd,
    ...(after.usage && { usage: usageSince(before.usage, after.usage) }),
    // Absent (too many to list) stays absent: the node's list is then no longer kept (FailedRows).
    ...(after.failed && { failed: after.failed.filter((row) => !failedBefore.has(row)) }),
    // The failed calls of rows this attempt left: its own, never in an earlier answer.
    ...(after.uncounted && { uncounted: after.uncounted }),
    ...(after.cancelled && { cancelled: true }),
  };
}

function usageSince(before: BlockUsage | undefined, after: BlockUsage): BlockUsage {
  if (!before) return after;
  const failedCalls = (after.failed_calls ?? 0) - (before.failed_calls ?? 0);
  return {
    calls: after.calls - before.calls,
    input_tokens: after.input_tokens - before.input_tokens,
    output_tokens: after.output_tokens - before.output_tokens,
    completed: after.completed - before.completed,
    failed: after.failed - before.failed,
    ...(failedCalls > 0 && { failed_calls: failedCalls }),
  };
}

/**
 * D35: what a block of a big node's rows holds in its stored pages, counted as the block's answer
 * counts it (its rows done, their cost and usage, the ones that did not complete). The block
 * answers with it (activities/node-block.ts); a block that failed or was cancelled is billed from
 * it (the `tallyBlock` activity); and so is a block whose run's workflow was closed from outside
 * before it answered (the API's settle, api/runs/settle-run.ts). One count, so a row is billed
 * alike whichever of them bills it.
 */
import {
  FAILED_ROWS_PER_BLOCK,
  PAGE_ROWS,
  pagesOf,
  toRanges,
  type StoredRow,
} from '../domain/item-blocks';
import type { BlockUsage } from '../domain/run-usage';
import type { Collections } from './db';
import { readPage } from './item-blocks';

type C = Pick<Collections, 'itemBlocks'>;

/** A block's rows: which are done, what they cost and used, and (if few) which did not complete. */
export interface BlockTally {
  /** Rows of the block finished (done or failed in place), and which ones when not all: [from, to) ranges. */
  done: number;
  ranges: Array<[number, number]>;
  costUsd: number;
  usage: BlockUsage;
  /** D38: the finished rows that did not complete (absolute indices), when at most FAILED_ROWS_PER_BLOCK. */
  failed?: number[];
}

/** The rows [first, first + count) of a block of rows, in the pages of node `nodeId` of run `runId`. */
export interface BlockRows {
  runId: string;
  nodeId: string;
  first: number;
  count: number;
}

/** The stored rows [first, first + count) of a node, by position (null: not stored), and which pages exist. */
export async function readBlockRows(
  c: C,
  { runId, nodeId, first, count }: BlockRows,
): Promise<{ rows: Array<StoredRow | null>; existing: Set<number> }> {
  const rows: Array<StoredRow | null> = Array.from({ length: count }, () => null);
  const existing = new Set<number>();
  const pages = pagesOf(first, first + count);
  const read = await Promise.all(pages.map((p) => readPage(c, runId, nodeId, p)));
  pages.forEach((p, i) => {
    const stored = read[i];
    if (!stored) return;
    existing.add(p);
    stored.forEach((row, k) => {
      const at = p * PAGE_ROWS + k - first;
      if (row && at >= 0 && at < count) rows[at] = row;
    });
  });
  return { rows, existing };
}

/** What the block's stored pages hold, read now. */
export async function tallyStoredBlock(c: C, block: BlockRows): Promise<BlockTally> {
  return tallyRows(block.first, (await readBlockRows(c, block)).rows);
}

/** The tally of a block's rows by position from row `first` (null: not finished). */
export function tallyRows(first: number, rows: Array<StoredRow | null>): BlockTally {
  const done: number[] = [];
  const failedRows: number[] = [];
  let costUsd = 0;
  const usage = { calls: 0, input_tokens: 0, output_tokens: 0, completed: 0, failed: 0 };
  let failedCalls = 0;
  rows.forEach((row, p) => {
    if (!row) return;
    done.push(first + p);
    costUsd += row.cost;
    // D36: counted from the stored rows like the cost, so a row re-run by a retry counts once.
    if (row.u) {
      usage.calls += row.u[0];
      usage.input_tokens += row.u[1];
      usage.output_tokens += row.u[2];
      failedCalls += row.u[3] ?? 0;
    }
    if (row.item.status === 'failed') usage.failed++;
    else usage.completed++;
    if (row.item.status !== 'completed') failedRows.push(first + p);
  });
  const all = done.length === rows.length;
  return {
    done: done.length,
    ranges: all ? [] : toRanges(done),
    costUsd,
    usage: failedCalls > 0 ? { ...usage, failed_calls: failedCalls } : usage,
    // D38: which rows a re-run of failed items runs, if few (the run's record lists them).
    ...(failedRows.length <= FAILED_ROWS_PER_BLOCK ? { failed: failedRows } : {}),
  };
}

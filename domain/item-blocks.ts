/**
 * D35 claim check: the items of a big list live in the store, not in Temporal's history. A list
 * of `count` rows produced by one node is kept in blocks of BLOCK_ROWS rows, each one document
 * whose `_id` is `<run id>:<node id>:<block>` (the one filter FerretDB pushes down to SQLite), so
 * any row is one `_id` read away and a reader holds one block at a time. History carries only the
 * reference (`ItemRef`), counts and costs.
 */
import type { Item } from './parts';

/** Rows per block at most: one activity runs one block, so 1,000,000 rows are 1,000 activities (history ≪ 20,000 events). */
export const BLOCK_ROWS = 1_000;

/** A list whose items are stored (D35): the node that produced it, how many rows it has, and its rows per block. */
export interface ItemRef {
  ref: string;
  count: number;
  blockRows: number;
}

/** One row of a stored block: its item, and what producing it cost (billed once, D17). */
export interface StoredRow {
  item: Item;
  cost: number;
}

/** A stored output of a run: the items of node `node`, output item ids from `idOffset` (domain/ids.ts idAtOffset). */
export interface StoredOutput {
  node: string;
  count: number;
  blockRows: number;
  idOffset: number;
}

export function isItemRef(value: unknown): value is ItemRef {
  return typeof value === 'object' && value !== null && 'ref' in value && 'count' in value;
}

export function blockId(runId: string, nodeId: string, block: number): string {
  return `${runId}:${nodeId}:${block}`;
}

/** The blocks holding rows [from, to). */
export function blocksOf(from: number, to: number, blockRows: number): number[] {
  const out: number[] = [];
  for (let b = Math.floor(from / blockRows); b * blockRows < to; b++) out.push(b);
  return out;
}

/** Several items of one row as the one item a stored list keeps per row: every part, failed if any failed. */
export function oneItem(items: Item[]): Item {
  if (items.length === 1) return items[0];
  const broken = items.find((item) => item.status === 'failed');
  if (broken) return broken;
  return { status: 'completed', parts: items.flatMap((item) => item.parts) };
}

/** Compact row ranges [from, to) from row indices (what a block's answer says it finished). */
export function toRanges(indices: Iterable<number>): Array<[number, number]> {
  const sorted = [...indices].sort((a, b) => a - b);
  const out: Array<[number, number]> = [];
  for (const i of sorted) {
    const last = out.at(-1);
    if (last && last[1] === i) last[1] = i + 1;
    else out.push([i, i + 1]);
  }
  return out;
}

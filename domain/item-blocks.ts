/**
 * D35 claim check: the items of a big list live in the store, not in Temporal's history. A list
 * of `count` rows produced by one node is kept in pages of PAGE_ROWS rows, each one document whose
 * `_id` is `<run id>:<node id>:<page>` (an exact `_id` filter is the one FerretDB pushes down to
 * SQLite), so any row is one `_id` read away and a reader holds one page at a time. History
 * carries only the reference (`ItemRef`), counts and costs.
 */
import { failed, textItem } from './items';
import { TemplateTooLarge } from './templates';
import type { Item } from './parts';

/** Rows per stored page: a page of 2 KB answers is ~200 KB, written once when it is complete. */
export const PAGE_ROWS = 100;

/**
 * The largest item one row of a stored list of several rows holds (its JSON): a page of PAGE_ROWS
 * of them stays one document (16 MB at most), and what a block holds in memory stays bounded
 * however big the answers a tenant's server sends. An answer past it fails its row's item.
 */
export const STORED_ROW_MAX_BYTES = 128 * 1024;

/**
 * The largest item of a stored list of one row (a join too large for the history, and what runs
 * on from it): alone in its page, compressed, with room for its JSON's escapes.
 */
export const STORED_ITEM_MAX_BYTES = 8 * 1024 * 1024;

/** The same for a row whose item travels in its chunk's answer through the history (2 MB a payload). */
export const INLINE_ROW_MAX_BYTES = 1024 * 1024;

/**
 * What the items of one node's inline rows may hold together, past 16 rows of INLINE_ROW_MAX_BYTES:
 * every answer enters the run's history (Temporal ends a run past 50 MB), and the rows in flight
 * at once answer together, so their worst case must leave room for the rest of the run.
 */
export const INLINE_NODE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * The bound of a row of an inline node of `rows` rows: INLINE_ROW_MAX_BYTES up to 16 rows, then
 * their share of INLINE_NODE_MAX_BYTES, never under a big list's row's (a node of 128 rows or
 * more, 2 x concurrency at the most concurrency by default, holds 128 KiB a row, as a big one).
 */
export function inlineRowMaxBytes(rows: number): number {
  const share = Math.floor(INLINE_NODE_MAX_BYTES / Math.max(1, rows));
  return Math.max(STORED_ROW_MAX_BYTES, Math.min(INLINE_ROW_MAX_BYTES, share));
}

/** The bound of a row of a block of a stored list (a block [0, 1) is the whole list). */
export function storedRowMaxBytes(block: { first: number; count: number }): number {
  return block.first === 0 && block.count === 1 ? STORED_ITEM_MAX_BYTES : STORED_ROW_MAX_BYTES;
}

/** Why `what` (a row's answer, a filled template) does not fit its item's bound (`maxBytes`, one of those above). */
export function rowTooLargeMessage(maxBytes: number, what = 'the answer'): string {
  const where =
    maxBytes === STORED_ROW_MAX_BYTES
      ? 'a row of a big list (D35), or of a node of 128 rows or more, holds at most 128 KiB'
      : maxBytes === STORED_ITEM_MAX_BYTES
        ? 'a stored item holds at most 8 MiB'
        : maxBytes >= INLINE_ROW_MAX_BYTES
          ? 'an item handed on through the run holds at most 1 MiB'
          : 'the rows of a node handed on through the run hold at most 16 MiB together (1 MiB a row up to 16 rows)';
  return `${what} is over the ${maxBytes} byte limit of one item: ${where}`;
}

/** What a row's item past its bound becomes: failed, naming the bound (the row's cost stays billed). */
export function rowTooLarge(maxBytes: number): Item {
  return failed({ message: rowTooLargeMessage(maxBytes), type: 'provider_error' });
}

/** The length of an item's JSON: what a row's bound measures, and what the storage quota counts (D19). */
export function itemLength(item: Item): number {
  return JSON.stringify(item).length;
}

/**
 * A row's items, or its item failed when they hold more than `maxBytes` (their JSON): its page or
 * its chunk's answer must stay within what the store and the history take. The cost stays billed.
 */
export function withinRowBound(items: Item[], maxBytes: number): Item[] {
  let bytes = 0;
  for (const item of items) bytes += itemLength(item);
  return bytes > maxBytes ? [rowTooLarge(maxBytes)] : items;
}

/** One row's item within its bound (as `withinRowBound`), with the length of the item it becomes. */
export function boundedItem(item: Item, maxBytes: number): { item: Item; length: number } {
  const length = itemLength(item);
  if (length <= maxBytes) return { item, length };
  const tooLarge = rowTooLarge(maxBytes);
  return { item: tooLarge, length: itemLength(tooLarge) };
}

/**
 * A `text` node's item within its bound (its JSON, as any row's): failed past it, naming the bound,
 * and never built when the filled text alone would pass it. A template that repeats a placeholder
 * over a large value would otherwise make a string the process cannot hold.
 */
export function boundedTextItem(
  node: { template: string },
  ports: Record<string, Item>,
  maxBytes: number,
  /** The text the run's text nodes may still fill (RUN_TEXT_MAX_CHARS): a text past it is not built either. */
  textLeft = Infinity,
): Item {
  try {
    const item = textItem(node, ports, Math.min(maxBytes, textLeft));
    if (JSON.stringify(item).length <= maxBytes) return item;
  } catch (err) {
    if (!(err instanceof TemplateTooLarge)) throw err;
    if (textLeft < maxBytes) return runTextSpent();
  }
  return failed({
    message: rowTooLargeMessage(maxBytes, 'the filled template'),
    type: 'template_too_large',
  });
}

/**
 * The placeholders the `text` nodes of one run may fill in the run itself, in all, and the
 * template characters they may read doing so (a placeholder that renders nothing, or a long path
 * into a value, costs the workflow's thread as much as one that renders a page): with
 * RUN_TEXT_MAX_CHARS, what bounds the work of a run's text nodes in one workflow task. Past 5 s of
 * it, the SDK's deadlock detector fires inside the sandbox and Node aborts the whole worker.
 */
export const RUN_TEXT_MAX_LOOKUPS = 200_000;
export const RUN_TEXT_MAX_TEMPLATE_CHARS = 32 * 1024 * 1024;

/** A text node's item past RUN_TEXT_MAX_LOOKUPS or RUN_TEXT_MAX_TEMPLATE_CHARS. */
export function runTextWorkSpent(): Item {
  return failed({
    message: `the text nodes of one run fill at most ${RUN_TEXT_MAX_LOOKUPS} placeholders from ${RUN_TEXT_MAX_TEMPLATE_CHARS} characters of templates in the run, and this one is past them (a list of more than twice the run's concurrency fills its rows in the store instead, D35)`,
    type: 'template_too_large',
  });
}

/**
 * The text the `text` nodes of one run may fill in the run itself, in all (their items live in the
 * workflow and reach the history with the run's end); a list of more than twice the run's
 * concurrency fills its rows in the store instead (D35).
 */
export const RUN_TEXT_MAX_CHARS = 8 * 1024 * 1024;

/** A text node's item past RUN_TEXT_MAX_CHARS. */
export function runTextSpent(): Item {
  return failed({
    message: `the filled template is over the ${RUN_TEXT_MAX_CHARS} character limit of the text the text nodes of one run hold in the run (a list of more than twice the run's concurrency fills its rows in the store instead, D35)`,
    type: 'template_too_large',
  });
}

/** Rows per activity at most: 1,000,000 rows are 1,000 activities (history ≪ 20,000 events). */
export const MAX_BLOCK_ROWS = 1_000;

/**
 * A list whose items are stored (D35): the node that produced it and how many rows it has. While
 * the node still runs (inside the workflow only, never in an activity's input), `ready(from, to)`
 * resolves once rows [from, to) are stored, and rejects if they never will be.
 */
export interface ItemRef {
  ref: string;
  count: number;
  ready?: (from: number, to: number) => Promise<void>;
}

/** One row of a stored page: its item, and what producing it cost (billed once, D17). */
export interface StoredRow {
  item: Item;
  cost: number;
  /**
   * D36: what the row's provider call used, `[calls, input tokens, output tokens]` (compact: a
   * 1,000,000-row list stores it a million times), and the row's calls that failed before it
   * ended (`failed_calls`, domain/run-usage.ts) when there were any. Absent on rows stored before
   * D36 and on rows that made no call (an upstream failure): nothing.
   */
  u?: [number, number, number] | [number, number, number, number];
  /**
   * D38: the row is the parent run's completed row, carried over by reference (stored as a line
   * `^` in a page whose `base` is the parent, store/item-blocks.ts): not run, billed nothing.
   */
  carried?: true;
}

/** A stored output of a run: the items of node `node`, output item ids from `idOffset` (domain/ids.ts idAtOffset). */
export interface StoredOutput {
  node: string;
  count: number;
  /** Rows per stored page (PAGE_ROWS when it was written). */
  pageRows: number;
  idOffset: number;
  /**
   * D38: the rows of the node that did not complete (ascending), written with the end of a
   * completed run when they are few (at most FAILED_ROWS_MAX): a re-run of failed items then runs
   * these rows and carries every other one by reference without reading the run's pages.
   * Absent: not known (more rows failed, the run did not complete, or it ran before this field).
   */
  failed?: number[];
}

/** D38: the most failed rows of one node a run's record lists (`StoredOutput.failed`); beyond it, a re-run reads pages. */
export const FAILED_ROWS_MAX = 10_000;
/** D38: the most failed rows one block reports in its answer (history); beyond it the node's list is not known. */
export const FAILED_ROWS_PER_BLOCK = 250;

export function isItemRef(value: unknown): value is ItemRef {
  return typeof value === 'object' && value !== null && 'ref' in value && 'count' in value;
}

export function pageId(runId: string, nodeId: string, page: number): string {
  return `${runId}:${nodeId}:${page}`;
}

/** The pages holding rows [from, to). */
export function pagesOf(from: number, to: number, pageRows = PAGE_ROWS): number[] {
  const out: number[] = [];
  for (let p = Math.floor(from / pageRows); p * pageRows < to; p++) out.push(p);
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

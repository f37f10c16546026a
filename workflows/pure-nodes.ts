/**
 * Nodes that do no I/O and cost nothing run right in workflow code: they are deterministic,
 * replay for free and add no activity round trip (docs/architecture.md "Where nodes run").
 */
import type { GraphNode } from '../domain/graph';
import { BatchRowsProblem, BatchRowsTooDeep, rowsOfItem } from '../domain/batch-rows';
import { isPatched } from './patches';
import type { Item, Part } from '../domain/parts';
import {
  batchTextSpent,
  inlineRowsSpent,
  MAX_ROWS,
  RUN_BATCH_TEXT_MAX_CHARS,
  RUN_INLINE_MAX_ROWS,
  tooManyRows,
} from '../domain/run-size';
import { NodeFailure } from './errors';
import { completed, valuePart } from '../domain/items';

type NodeOf<T extends GraphNode['type']> = Extract<GraphNode, { type: T }>;

/** The one item a User Input node emits for its (already validated, D4) value. */
export function userInputItems(node: NodeOf<'user_input'>, value: unknown): Item[] {
  if (value === undefined) return [completed()];
  switch (node.input_type) {
    case 'text':
      return [completed({ type: 'text', text: String(value) })];
    case 'image':
    case 'video':
    case 'file':
      // D19: resolved to a stored file's part with a signed link before the graph runs (workflows/file-inputs.ts).
      if (isFilePart(value)) return [completed(value)];
      return [completed({ type: node.input_type, url: String(value) })];
    default:
      return [completed({ type: 'json', data: value })];
  }
}

function isFilePart(value: unknown): value is Extract<Part, { type: 'image' | 'video' | 'file' }> {
  const v = value as { type?: unknown; url?: unknown } | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    ['image', 'video', 'file'].includes(v.type as string) &&
    typeof v.url === 'string'
  );
}

/** The rows of the `rows` port's items, or the node's failure naming why there are none. */
function inputRows(
  node: NodeOf<'batch'>,
  rowsInput: Item[],
  maxDepth?: number,
  limit = Infinity,
): unknown[] {
  try {
    const rows: unknown[] = [];
    for (const item of rowsInput) {
      for (const row of rowsOfItem(item, maxDepth, limit - rows.length)) rows.push(row);
      if (rows.length > limit) break;
    }
    return rows;
  } catch (err) {
    // Runs before patch `batch-rows-depth` took such rows (and then could not end): as they did.
    if (err instanceof BatchRowsTooDeep && !isPatched('batch-rows-depth'))
      return inputRows(node, rowsInput, Infinity);
    if (err instanceof BatchRowsProblem) throw new NodeFailure(node.id, node.type, err.message);
    throw err;
  }
}

/**
 * What the run's batch nodes may still do in its workflow, in all (D31): split RUN_BATCH_TEXT_MAX_CHARS
 * of text and make RUN_INLINE_MAX_ROWS rows. Past either the batch fails, asked only then (patch
 * `run-items-bound`): one text of 300,000 lines fed to eight batches held a task past 5 s.
 */
export class BatchWork {
  private textLeft = RUN_BATCH_TEXT_MAX_CHARS;
  private rowsLeft = RUN_INLINE_MAX_ROWS;

  constructor(readonly bounded: () => boolean) {}

  /** Before a batch reads its rows input: the characters of its texts. */
  takeText(node: NodeOf<'batch'>, items: Item[]): void {
    let chars = 0;
    for (const item of items)
      for (const part of item.parts) if (part.type === 'text') chars += part.text.length;
    this.textLeft -= chars;
    if (this.textLeft < 0 && this.bounded())
      throw new NodeFailure(node.id, node.type, batchTextSpent(chars));
  }

  /** Before a batch makes its items: their count. */
  takeRows(node: NodeOf<'batch'>, rows: number): void {
    this.rowsLeft -= rows;
    if (this.rowsLeft < 0 && this.bounded())
      throw new NodeFailure(node.id, node.type, inlineRowsSpent(rows));
  }
}

/** Batch: one item per row, from the `rows` port (domain/batch-rows.ts) or the node's own rows. */
export function batchItems(
  node: NodeOf<'batch'>,
  rowsInput: Item[] | undefined,
  work?: BatchWork,
): Item[] {
  let rows: unknown[];
  let more = false;
  if (rowsInput) {
    work?.takeText(node, rowsInput);
    // Counted only to one past MAX_ROWS; a run from before the bound counted them all, as it did.
    rows = inputRows(node, rowsInput, undefined, work ? MAX_ROWS : Infinity);
    more = rows.length > MAX_ROWS && work!.bounded();
    if (rows.length > MAX_ROWS && !more) rows = inputRows(node, rowsInput);
  } else if (node.rows) {
    rows = node.rows;
  } else {
    throw new NodeFailure(node.id, node.type, 'has neither rows nor a rows input');
  }
  if (rows.length > MAX_ROWS)
    throw new NodeFailure(
      node.id,
      node.type,
      more ? tooManyRows(MAX_ROWS, true) : tooManyRows(rows.length),
    );
  work?.takeRows(node, rows.length);
  return rows.map((row) => completed(valuePart(row)));
}

/** Select: the one item at `index` (negative counts from the end). */
export function selectItems(node: NodeOf<'select'>, items: Item[]): Item[] {
  return [items[selectedIndex(node, items.length)]];
}

/** The position select takes from a list of `length` items; a NodeFailure when there is none. */
export function selectedIndex(node: NodeOf<'select'>, length: number): number {
  const at = node.index < 0 ? length + node.index : node.index;
  if (at < 0 || at >= length) {
    throw new NodeFailure(
      node.id,
      node.type,
      `index ${node.index} is out of range for ${length} item(s)`,
    );
  }
  return at;
}

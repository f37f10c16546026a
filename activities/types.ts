/** What the workflow hands the node activities and what they answer: activity types only, safe for workflow code. */
import type { NodeOfType } from '../domain/graph';
import type { Item } from '../domain/parts';
import type { PackedItem } from '../domain/items';
import type { ItemRef } from '../domain/item-blocks';
import type { BlockUsage, CallUsage } from '../domain/run-usage';

/** Node types that do I/O or cost money, so they run in activities (docs/architecture.md "Where nodes run"). */
export type IoNodeType = 'llm' | 'http_request' | 'image_generation' | 'model';
export type IoNode = NodeOfType<IoNodeType>;
/** A node that runs in blocks of stored rows (D35): an I/O node, or a `text` node given a stored list. */
export type BlockNode = IoNode | NodeOfType<'text'>;

/** One iteration of an I/O node, as the workflow hands it to an activity. */
export interface NodeRequest<T extends IoNodeType> {
  runId: string;
  /** Owner of the files the node stores (D19); absent in requests of runs started before files existed. */
  accountId?: string;
  node: NodeOfType<T>;
  iteration: number;
  /** The item each input port receives in this iteration. */
  ports: Record<string, Item>;
  /**
   * The most the row's item may hold (domain/item-blocks.ts STORED_ROW_MAX_BYTES or
   * INLINE_ROW_MAX_BYTES, set by the chunk or block running it): an http_request reads no more
   * of its answer than this. Absent: the answer caps only.
   */
  rowMaxBytes?: number;
  /** D36: the run's priority key when the block running the row has the neutral one (NodeBlockRequest). */
  priorityKey?: number;
}

/** What a node iteration produced and what it cost (D17). */
export interface NodeResult {
  items: Item[];
  costUsd: number;
  /** D36: tokens as the provider reported them (llm); absent: none. */
  tokens?: { input: number; output: number };
}

/** One iteration (row) of a node inside a chunk. */
export interface NodeRow {
  /** The iteration's index in the node's input lists; output order follows it. */
  index: number;
  ports: Record<string, Item>;
}

/**
 * A range of one I/O node's iterations run by one activity (D31): many rows per activity keep a
 * 100,000-row run far below Temporal's history limits, and `concurrency` of them run at a time.
 */
export interface NodeChunkRequest {
  runId: string;
  accountId?: string;
  node: IoNode;
  rows: NodeRow[];
  /** Provider calls in flight at once inside this activity (slots the run's semaphore granted it). */
  concurrency: number;
  /**
   * The most one row's item may hold (domain/item-blocks.ts inlineRowMaxBytes of the node's rows);
   * absent in requests of runs started before it: INLINE_ROW_MAX_BYTES.
   */
  rowMaxBytes?: number;
}

/** One finished row of a chunk: its items (a refused item is a failed item) and its cost. */
export interface RowResult {
  index: number;
  items: Item[];
  costUsd: number;
  /** D36: what the row's provider call used; absent in answers recorded before D36. */
  usage?: CallUsage;
}

/**
 * The rows a chunk finished. It may hold fewer rows than asked for: the answer stops at a size
 * budget (Temporal's 2 MB payload limit) or at a cancel; the workflow asks again for the rest.
 */
export interface NodeChunkResult {
  rows: RowResult[];
  /** True when the run's cancel stopped the chunk: the rows given are the ones that finished. */
  cancelled?: boolean;
  /** D36: the failed calls of rows it did not finish (counted, never billed); absent when none. */
  uncounted?: CallUsage;
}

/** Where one input port of a stored-mode node takes its items (D35): one item for every row, the block's own rows, or a stored list. */
export type PortSource =
  | { item: Item }
  | { items: Item[] }
  /** D38: some rows of an inline list, by row index (a re-run's block gets only the rows it runs). */
  | { picked: Array<[number, Item]> }
  /** D35: the block's rows of an inline list, packed (domain/items.ts packItem). */
  | { packed: PackedItem[] }
  | ItemRef;

/**
 * One block of a big node's rows (D35): the activity reads its input rows from the store (or
 * the few given inline), runs them, and writes its items to the store as block `block` of the node.
 * Rows `first` … `first + count - 1`; `first` is `block × blockRows`.
 */
export interface NodeBlockRequest {
  runId: string;
  accountId?: string;
  node: BlockNode;
  block: number;
  first: number;
  count: number;
  ports: Record<string, PortSource>;
  /** The node feeding each port, for the message of an upstream failure. */
  sources: Record<string, string>;
  concurrency: number;
  /** D38: a re-run of failed items takes the rows this run (id) completed from its pages instead of running them. */
  carryFrom?: string;
  /**
   * D38: with `carryFrom`, the rows to run (the parent's failed rows, which its record lists):
   * every other row of the block is carried by reference, without reading the parent's pages.
   * Absent: the parent's pages are read to learn which rows it completed.
   */
  runRows?: number[];
  /**
   * D36 `max_cost`: run at most this many of the block's unfinished rows (the ones that fit the
   * run's remaining budget); the rest stay unfinished. Absent: all of them.
   */
  limit?: number;
  /**
   * D36 `max_cost`: the block ran before, shrunk to `limit` rows, and runs again for the rows it
   * left: its pages hold the rows it ran, so even a re-run's first attempt reads them (D38).
   */
  resumed?: boolean;
  /**
   * D36: the run's Temporal priority key, where the block's own is the neutral one (patch
   * `blocks-fair`): what orders the account's blocks and calls in the worker. Absent: the
   * activity's inherited key is the run's.
   */
  priorityKey?: number;
}

/** What a block answers: counts and cost only; its items are in the store. */
export interface NodeBlockResult {
  /** Rows of the block finished (done or failed in place), and which ones when not all: [from, to) ranges. */
  done: number;
  ranges: Array<[number, number]>;
  /** What the block's finished rows cost, whichever attempt ran them: billed once, from this answer. */
  costUsd: number;
  cancelled?: boolean;
  /** D36: the usage of the block's stored rows, counted like `costUsd`; absent in answers recorded before D36. */
  usage?: BlockUsage;
  /**
   * D38: the finished rows that did not complete (absolute indices), when at most
   * FAILED_ROWS_PER_BLOCK (domain/item-blocks.ts); absent when more, or in answers recorded before.
   */
  failed?: number[];
  /** D36: the failed calls of rows it did not finish (counted, never billed); absent when none. */
  uncounted?: CallUsage;
}

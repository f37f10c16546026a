/**
 * D35: the list nodes `select`, `join` and `batch` over a stored list (a file's rows, the items of
 * a node bigger than its run's concurrency serves at once). The workflow never holds such a list,
 * so these activities read what the node needs from the list's pages (by `_id`,
 * domain/item-blocks.ts) once the list is done: select and join answer the node's one item, batch
 * stores its rows as a list of its own and answers their count. Reading changes nothing, and a
 * batch writes the same pages again: a retry is free.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import type { NodeOfType } from '../domain/graph';
import { pagesOf, PAGE_ROWS, STORED_ITEM_MAX_BYTES, type ItemRef } from '../domain/item-blocks';
import { BatchRowsProblem, rowsOfItem } from '../domain/batch-rows';
import { completed, valuePart } from '../domain/items';
import { Joiner } from '../domain/join-items';
import type { Item } from '../domain/parts';
import type { Collections } from '../store/db';
import { tooManyRows } from '../domain/run-size';
import { readPage } from '../store/item-blocks';
import { PageWriter } from '../store/page-writer';
import type { StorageQuota } from '../store/storage-quota';
import { heartbeating } from './heartbeat';
import { ListStorage } from './list-storage';
import { cancelledByShutdown, handBack } from './shutdown';

type C = Pick<Collections, 'itemBlocks' | 'itemUsage' | 'runs'>;

/**
 * The largest joined item handed to the workflow, in bytes (its texts and separators, the JSON of
 * its other parts): such an item travels through Temporal's history (whose payloads are refused
 * above 2 MB) to the nodes after the join. A larger one stays in the store (D35's claim check), up
 * to STORED_ITEM_MAX_BYTES.
 */
export const JOIN_MAX_BYTES = 1024 * 1024;

/** Its JSON at most, escapes included: below the 16 MB of the one document its page is. */
const JOIN_STORED_MAX_JSON_BYTES = 14 * 1024 * 1024;

/** Pages read at once: FerretDB serves several `_id` reads in parallel (store/item-blocks.ts). */
const READ_AHEAD = 8;

export interface SelectStoredRequest {
  runId: string;
  list: ItemRef;
  /** The row to take (the workflow resolved a negative index and checked the range). */
  at: number;
}

export interface JoinStoredRequest {
  runId: string;
  node: NodeOfType<'join'>;
  list: ItemRef;
  /** The node feeding the join, for the message of a failed input item. */
  sourceId: string;
  /**
   * The workflow takes a joined item larger than JOIN_MAX_BYTES as a stored list of one row (an
   * ItemRef). Absent in the requests of workflow code from before, which takes items only: for
   * them such a join fails as it did.
   */
  storeLarge?: boolean;
}

export interface BatchStoredRequest {
  runId: string;
  /** The batch node: the owner of the pages written. */
  nodeId: string;
  list: ItemRef;
  maxRows: number;
}

/** A row the done list should hold and does not: the store lost it, so no retry brings it back. */
function missingRow(list: ItemRef, row: number): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `row ${row} of node '${list.ref}' is missing from the store`,
    'StoredRowMissing',
  );
}

/** A join past its bound fails the node, naming the row that passed it. */
function joinTooLarge(max: number, row: number, count: number): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `the joined item would be larger than ${max / 1024 / 1024} MiB (at row ${row} of ${count}): join fewer rows, or read them from a result of the node before the join`,
    'JoinTooLarge',
  );
}

/** What an input item adds to the joined item: its texts and a separator, its other parts' JSON. */
function joinedBytes(item: Item, separator: string): number {
  let bytes = 0;
  for (const part of item.parts)
    bytes +=
      part.type === 'text'
        ? Buffer.byteLength(part.text) + Buffer.byteLength(separator)
        : Buffer.byteLength(JSON.stringify(part));
  return bytes;
}

/**
 * Heartbeats (Temporal delivers a cancel through them) and stops a cancelled read: a run's cancel
 * (D8) ends it now, not after the last page; a worker's drain hands it back to another worker.
 */
function stopIfCancelled(context: Context): void {
  context.heartbeat();
  if (!context.cancellationSignal.aborted) return;
  if (cancelledByShutdown(context)) throw handBack();
  throw new CancelledFailure('the run was cancelled');
}

/**
 * Builds the activities of `select`, `join` and `batch` over stored lists; the lists `join` and
 * `batch` store count in the account's storage `quota`, where there is one (activities/list-storage.ts).
 */
export function createStoredListActivities(collections: C, quota?: StorageQuota) {
  // A worker without file storage has no quota to count in (tests of these activities alone).
  const storageOf = (runId: string, nodeId: string) =>
    quota && new ListStorage(collections, quota, { runId, nodeId }, `node '${nodeId}'`);

  /** The rows of the list's pages in order, READ_AHEAD pages in flight, heartbeating once a batch. */
  async function* rowsOf(runId: string, list: ItemRef): AsyncGenerator<Item> {
    const pages = pagesOf(0, list.count);
    for (let i = 0; i < pages.length; i += READ_AHEAD) {
      const batch = pages.slice(i, i + READ_AHEAD);
      const read = await Promise.all(batch.map((p) => readPage(collections, runId, list.ref, p)));
      stopIfCancelled(Context.current());
      for (const [k, rows] of read.entries()) {
        const first = batch[k] * PAGE_ROWS;
        const end = Math.min(first + PAGE_ROWS, list.count);
        for (let row = first; row < end; row++) {
          const stored = rows?.[row - first];
          if (!stored) throw missingRow(list, row);
          yield stored.item;
        }
      }
    }
  }

  return {
    async selectStoredItem(req: SelectStoredRequest): Promise<Item[]> {
      const page = Math.floor(req.at / PAGE_ROWS);
      const rows = await readPage(collections, req.runId, req.list.ref, page);
      const stored = rows?.[req.at - page * PAGE_ROWS];
      if (!stored) throw missingRow(req.list, req.at);
      return [stored.item];
    },

    /**
     * The join's one item: handed back when it is small, else (`storeLarge`) written as the first
     * row of the join's own stored list, whose reference the workflow gets, so the item never
     * enters the history. Retried, the page is found written already.
     */
    async joinStoredItems(req: JoinStoredRequest): Promise<Item[] | ItemRef> {
      const separator = req.node.separator ?? '\n';
      const joiner = new Joiner(separator, req.sourceId);
      const max = req.storeLarge ? STORED_ITEM_MAX_BYTES : JOIN_MAX_BYTES;
      let bytes = 0;
      let index = 0;
      for await (const item of rowsOf(req.runId, req.list)) {
        if (!joiner.add(item, index)) break; // a failed input item decides the join
        bytes += joinedBytes(item, separator);
        if (bytes > max) throw joinTooLarge(max, index, req.list.count);
        index++;
      }
      const joined = joiner.result();
      if (bytes <= JOIN_MAX_BYTES || !req.storeLarge) return joined;
      const json = Buffer.byteLength(JSON.stringify(joined[0]));
      if (json > JOIN_STORED_MAX_JSON_BYTES) throw joinTooLarge(max, index - 1, req.list.count);
      const storage = storageOf(req.runId, req.node.id);
      const page = new PageWriter(collections, req.runId, req.node.id, storage);
      await page.add({ item: joined[0], cost: 0 });
      await page.end();
      return { ref: req.node.id, count: 1 };
    },

    /**
     * `batch` of a stored list: the rows of its items (domain/batch-rows.ts) stored in order as the
     * batch node's own list, whose count the workflow gets. An item that gives no rows fails the
     * node, as the inline batch does.
     */
    batchStoredRows(req: BatchStoredRequest): Promise<{ count: number }> {
      // Heartbeats every second besides the reads': one item's rows may take many writes.
      return heartbeating(async () => {
        const storage = storageOf(req.runId, req.nodeId);
        const pages = new PageWriter(collections, req.runId, req.nodeId, storage);
        for await (const item of rowsOf(req.runId, req.list)) {
          let rows: unknown[];
          try {
            rows = rowsOfItem(item);
          } catch (err) {
            if (err instanceof BatchRowsProblem)
              throw ApplicationFailure.nonRetryable(err.message, 'InvalidRows');
            throw err;
          }
          for (const row of rows) {
            if (pages.count === req.maxRows)
              throw ApplicationFailure.nonRetryable(tooManyRows(req.maxRows, true), 'TooManyRows');
            await pages.add({ item: completed(valuePart(row)), cost: 0 });
          }
        }
        return { count: await pages.end() };
      });
    },
  };
}

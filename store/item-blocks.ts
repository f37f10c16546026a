/**
 * Pages of stored items (domain/item-blocks.ts, D35), read by `_id` alone. A page is written by
 * the one activity that owns its rows: inserted once when complete (an insert is the cheap write
 * on FerretDB 1.x, where a replace of a large document was measured to cost ~0.3–1.3 s and grow
 * with the collection); a page left incomplete by an attempt that stops is replaced by `_id`.
 * Rows are JSON text for the same reason run outputs are (store/documents.ts StoredRunDoc).
 */
import type { AnyBulkWriteOperation } from 'mongodb';
import { pageId, type StoredOutput, type StoredRow } from '../domain/item-blocks';
import { idAtOffset } from '../domain/ids';
import type { OutputItem } from '../domain/run';
import type { Collections } from './db';
import type { ItemBlockDoc } from './documents';

type C = Pick<Collections, 'itemBlocks'>;

/** One page to write: its rows by position (null: not finished). */
export interface PageWrite {
  page: number;
  rows: Array<StoredRow | null>;
}

function toDoc(runId: string, nodeId: string, { page, rows }: PageWrite): ItemBlockDoc {
  return {
    _id: pageId(runId, nodeId, page),
    run_id: runId,
    node_id: nodeId,
    page,
    rows_json: JSON.stringify(rows),
    created_at: new Date(),
  };
}

/** Inserts pages in one round trip; a page already there (a retry) is left as it is. */
export async function insertPages(
  c: C,
  runId: string,
  nodeId: string,
  pages: PageWrite[],
): Promise<void> {
  if (pages.length === 0) return;
  try {
    await c.itemBlocks.insertMany(
      pages.map((page) => toDoc(runId, nodeId, page)),
      { ordered: false },
    );
  } catch (err) {
    const errors = (err as { writeErrors?: Array<{ code?: number }> | { code?: number } })
      .writeErrors;
    const list = Array.isArray(errors) ? errors : errors ? [errors] : [];
    const duplicatesOnly =
      list.length > 0
        ? list.every((e) => e.code === 11000)
        : (err as { code?: unknown }).code === 11000;
    if (!duplicatesOnly) throw err;
  }
}

/** Writes (or overwrites) pages by `_id` in one round trip. */
export async function replacePages(
  c: C,
  runId: string,
  nodeId: string,
  pages: PageWrite[],
): Promise<void> {
  if (pages.length === 0) return;
  const ops: AnyBulkWriteOperation<ItemBlockDoc>[] = pages.map((page) => {
    const doc = toDoc(runId, nodeId, page);
    return { replaceOne: { filter: { _id: doc._id }, replacement: doc, upsert: true } };
  });
  await c.itemBlocks.bulkWrite(ops, { ordered: false });
}

/** One page's rows, or null when nothing of it was written yet. */
export async function readPage(
  c: C,
  runId: string,
  nodeId: string,
  page: number,
): Promise<Array<StoredRow | null> | null> {
  const doc = await c.itemBlocks.findOne({ _id: pageId(runId, nodeId, page) });
  return doc && (JSON.parse(doc.rows_json) as Array<StoredRow | null>);
}

/** D38: whether a run stored any page of a node's first rows (its first page), by `_id`. */
export async function hasFirstPage(c: C, runId: string, nodeId: string): Promise<boolean> {
  const doc = await c.itemBlocks.findOne(
    { _id: pageId(runId, nodeId, 0) },
    { projection: { _id: 1 } },
  );
  return doc !== null;
}

/** Pages read ahead of the one handed out: a reader waits on one round trip in four, not every one. */
const READ_AHEAD = 4;

/**
 * A stored output's items from row `from` on, in order, a few pages in memory at a time (the next
 * ones are read while one is handed out): rows not finished are skipped, or `running` while live.
 */
export async function* storedItems(
  c: C,
  runId: string,
  itemIdBase: string,
  stored: StoredOutput,
  from: number,
  live: boolean,
): AsyncGenerator<OutputItem> {
  const size = stored.pageRows;
  const last = Math.ceil(stored.count / size);
  let next = Math.floor(from / size);
  const ahead: Array<{ page: number; rows: Promise<Array<StoredRow | null> | null> }> = [];
  const fill = () => {
    while (ahead.length < READ_AHEAD && next < last) {
      const rows = readPage(c, runId, stored.node, next);
      rows.catch(() => undefined); // awaited in turn; an early return must not leave it unhandled
      ahead.push({ page: next++, rows });
    }
  };
  fill();
  while (ahead.length > 0) {
    const { page, rows: pending } = ahead.shift()!;
    const rows = await pending;
    fill();
    const first = page * size;
    const end = Math.min(first + size, stored.count);
    for (let k = Math.max(first, from); k < end; k++) {
      const row = rows?.[k - first];
      const id = idAtOffset(itemIdBase, stored.idOffset + k);
      if (row) {
        const { status, parts, error } = row.item;
        yield { id, item_index: k, status, parts, ...(error ? { error } : {}) };
      } else if (live) yield { id, item_index: k, status: 'running', parts: [] };
    }
  }
}

/**
 * Blocks of stored items (domain/item-blocks.ts, D35): written whole by the one activity that owns
 * a block (replace by `_id`, so a retry or a later flush simply overwrites), read by `_id` alone.
 * Rows are JSON text for the same reason run outputs are (store/documents.ts StoredRunDoc).
 */
import type { AnyBulkWriteOperation } from 'mongodb';
import { blockId, type StoredOutput, type StoredRow } from '../domain/item-blocks';
import { idAtOffset } from '../domain/ids';
import type { OutputItem } from '../domain/run';
import type { Collections } from './db';
import type { ItemBlockDoc } from './documents';

type C = Pick<Collections, 'itemBlocks'>;

/** A block's rows by position (null: not finished), as read back. */
export interface Block {
  rows: Array<StoredRow | null>;
}

function toDoc(runId: string, nodeId: string, block: number, rows: Array<StoredRow | null>) {
  return {
    _id: blockId(runId, nodeId, block),
    run_id: runId,
    node_id: nodeId,
    block,
    rows_json: JSON.stringify(rows),
    created_at: new Date(),
  } satisfies ItemBlockDoc;
}

/** Writes (or overwrites) one block. */
export async function writeBlock(
  c: C,
  runId: string,
  nodeId: string,
  block: number,
  rows: Array<StoredRow | null>,
): Promise<void> {
  const doc = toDoc(runId, nodeId, block, rows);
  await c.itemBlocks.replaceOne({ _id: doc._id }, doc, { upsert: true });
}

/** Writes many blocks in one round trip (a file's rows). */
export async function writeBlocks(
  c: C,
  runId: string,
  nodeId: string,
  blocks: Array<{ block: number; rows: StoredRow[] }>,
): Promise<void> {
  if (blocks.length === 0) return;
  const ops: AnyBulkWriteOperation<ItemBlockDoc>[] = blocks.map(({ block, rows }) => {
    const doc = toDoc(runId, nodeId, block, rows);
    return { replaceOne: { filter: { _id: doc._id }, replacement: doc, upsert: true } };
  });
  await c.itemBlocks.bulkWrite(ops, { ordered: false });
}

/** One block, or null when nothing of it was written yet. */
export async function readBlock(
  c: C,
  runId: string,
  nodeId: string,
  block: number,
): Promise<Block | null> {
  const doc = await c.itemBlocks.findOne({ _id: blockId(runId, nodeId, block) });
  return doc && { rows: JSON.parse(doc.rows_json) as Array<StoredRow | null> };
}

/**
 * A stored output's items from row `from` on, in order, one block in memory at a time (D35):
 * rows not finished are skipped, or shown `running` while the run is live.
 */
export async function* storedItems(
  c: C,
  runId: string,
  itemIdBase: string,
  stored: StoredOutput,
  from: number,
  live: boolean,
): AsyncGenerator<OutputItem> {
  for (let b = Math.floor(from / stored.blockRows); b * stored.blockRows < stored.count; b++) {
    const block = await readBlock(c, runId, stored.node, b);
    const first = b * stored.blockRows;
    const end = Math.min(first + stored.blockRows, stored.count);
    for (let k = Math.max(first, from); k < end; k++) {
      const row = block?.rows[k - first];
      const id = idAtOffset(itemIdBase, stored.idOffset + k);
      if (row) {
        const { status, parts, error } = row.item;
        yield { id, item_index: k, status, parts, ...(error ? { error } : {}) };
      } else if (live) yield { id, item_index: k, status: 'running', parts: [] };
    }
  }
}

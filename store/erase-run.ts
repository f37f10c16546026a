/**
 * D39: everything the service keeps of a run, removed by its id: the one place that knows what a
 * run leaves behind. Extend it when a run gains a new kind of stored data.
 *
 * What goes: its idempotency keys (they bind a caller's key to the run id and a hash of the body),
 * its webhook delivery (the URL and outcome), the files it produced or fetched as inputs (GridFS),
 * its stored chunks (big runs' outputs and events), its item blocks (D35: the rows it read from
 * files and the items its nodes made) and their count in the storage quota, and last its record (inputs, metadata, output,
 * event log, and the secret its Temporal payloads' key derives from, lib/codec/run-keys.ts). The
 * record is marked `deleting` first, so no read sees the run half gone (a crash mid-way left it
 * `completed` with no items), and goes last, so a delete that failed half-way is found and
 * finished by the next one. What
 * stays: ledger entries and the hold chain, which hold amounts, the run id and its status only.
 * Uploaded files a run used as inputs are the account's own objects (D19): they stay.
 */
import type { Db } from 'mongodb';
import { webhookMessageId } from '../domain/run';
import type { Collections } from './db';
import { deleteAll, deleteByIds } from './delete-all';
import { deleteFiles, filesCollection } from './files';

export interface ErasedRun {
  /** Whether a record was there to remove (false: unknown, or erased before). */
  record: boolean;
  chunks: number;
  itemBlocks: number;
  files: number;
  idempotencyKeys: number;
  webhookDeliveries: number;
}

/** What a run is removed from. */
export type EraseCollections = Pick<
  Collections,
  'runs' | 'runChunks' | 'itemBlocks' | 'itemUsage' | 'idempotencyKeys' | 'webhookDeliveries'
>;

/** The indexes erasing uses on MongoDB besides `_id` and those store/db.ts makes for other reads (created at start-up). */
export async function ensureEraseIndexes(c: EraseCollections, db: Db): Promise<void> {
  await Promise.all([
    c.idempotencyKeys.createIndex({ run_id: 1 }, { name: 'run_id' }),
    c.webhookDeliveries.createIndex({ run_id: 1 }, { name: 'run_id' }),
    filesCollection(db).createIndex({ 'metadata.run_id': 1 }, { name: 'run_id' }),
  ]);
}

/** Removes everything of run `runId` (any account's: the caller checked ownership); safe to repeat. */
export async function eraseRun(c: EraseCollections, db: Db, runId: string): Promise<ErasedRun> {
  // Marked, then read (FerretDB's findAndModify takes no projection, and a record may hold MBs).
  await c.runs.updateOne({ _id: runId }, { $set: { deleting: true } });
  const record = await c.runs.findOne({ _id: runId }, { projection: { chunks: 1 } });
  // Keys first: one left pointing at a removed run would let a repeated start answer with it (D18).
  const idempotencyKeys = await deleteAll(c.idempotencyKeys, { run_id: runId });
  const webhookDeliveries =
    (await c.webhookDeliveries.deleteOne({ _id: webhookMessageId(runId) })).deletedCount +
    (await deleteAll(c.webhookDeliveries, { run_id: runId }));
  const fileIds = await filesCollection(db)
    .find({ 'metadata.run_id': runId }, { projection: { _id: 1 } })
    .map((f) => f._id)
    .toArray();
  await deleteFiles(db, fileIds);
  // Chunks by `_id` (`<run id>.<index>`), then any a crashed finalize wrote beyond the count.
  const count = record?.chunks ?? 0;
  const chunks =
    (await deleteByIds(
      c.runChunks,
      Array.from({ length: count }, (_, i) => `${runId}.${i}`),
    )) + (await deleteAll(c.runChunks, { run_id: runId }));
  const itemBlocks = await deleteAll(c.itemBlocks, { run_id: runId });
  // After the pages: a count left without its pages holds the account's room too long, never too little.
  await deleteAll(c.itemUsage, { run_id: runId });
  const removed = (await c.runs.deleteOne({ _id: runId })).deletedCount === 1;
  return {
    record: removed,
    chunks,
    itemBlocks,
    files: fileIds.length,
    idempotencyKeys,
    webhookDeliveries,
  };
}

/**
 * What the items of big runs hold, per account (D19, D35): a `text` node over a million file rows
 * can fill a row of 128 KiB each at no cost, so the items of big runs count against the account's
 * storage quota beside its files (store/storage-quota.ts `fileQuota`). Each block of a node's rows
 * (activities/node-block.ts), and each list a run stores of its own (activities/list-storage.ts),
 * keeps one small document here, `_id` the block's (a list's: its first page's), that it replaces
 * with its stored items' JSON bytes whenever it writes pages: one writer a document (FerretDB does
 * not isolate concurrent updates of one), and a retried attempt counts the pages it found again.
 * The account's sum reads these documents, never the pages. Retention and run deletes remove them
 * with their run's pages (store/retention.ts, store/erase-run.ts).
 */
import { pageId } from '../domain/item-blocks';
import type { Collections } from './db';

type C = Pick<Collections, 'itemUsage'>;

/** One block's stored items: where it is, whose it is, and their JSON bytes so far. */
export interface BlockUsage {
  runId: string;
  nodeId: string;
  first: number;
  accountId: string;
  bytes: number;
}

/** Records what a block stores now (replacing what an earlier write or attempt recorded). */
export async function recordBlockUsage(c: C, usage: BlockUsage): Promise<void> {
  // The block's `_id` has the shape of a page's, numbered by its first row.
  const _id = pageId(usage.runId, usage.nodeId, usage.first);
  await c.itemUsage.replaceOne(
    { _id },
    {
      run_id: usage.runId,
      account_id: usage.accountId,
      bytes: usage.bytes,
      created_at: new Date(),
    },
    { upsert: true },
  );
}

/** The JSON bytes an account's big runs store (a scan of small documents on FerretDB, an index range on MongoDB). */
export async function storedItemBytes(c: C, accountId: string): Promise<number> {
  const [sum] = await c.itemUsage
    .aggregate<{ bytes: number }>([
      { $match: { account_id: accountId } },
      { $group: { _id: null, bytes: { $sum: '$bytes' } } },
    ])
    .toArray();
  return sum?.bytes ?? 0;
}

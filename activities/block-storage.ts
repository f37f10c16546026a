/**
 * D19, D35: the items a block of a big node's rows stores, in its account's storage quota. A
 * `text` node over a million file rows could otherwise store 128 KiB a row for nothing, filling
 * the storage every tenant shares. Every item a block stores counts, as the length of its JSON;
 * the item of a node nobody pays for (`text`, `http_request`) that finds no room fails instead
 * (`storage_quota_exceeded`; a re-run of the failed items retries it once room is made, D38),
 * while a paid answer is kept and counted: refusing it would lose paid work, and its price bounds
 * it (as a provider's output file, D19). The block's total goes to the store with each write of
 * its pages (store/item-usage.ts), where every process's quota sums it.
 */
import { failed } from '../domain/items';
import type { Item } from '../domain/parts';
import { itemLength, type StoredRow } from '../domain/item-blocks';
import type { Collections } from '../store/db';
import { recordBlockUsage } from '../store/item-usage';
import type { StorageQuota } from '../store/storage-quota';
import { quotaFullMessage } from './files';
import { waitingForStore } from './store-wait';
import type { NodeBlockRequest } from './types';

/** The node types whose rows cost nothing: what they store is refused past the quota. */
const UNPAID = new Set(['text', 'http_request']);

export class BlockStorage {
  private bytes: number;
  /** Bytes counted in the quota that the store's sum does not hold yet (held there until recorded). */
  private unrecorded = 0;
  private readonly unpaid: boolean;

  /**
   * `stored`: the rows the block's pages already held (an earlier attempt's), counted again;
   * `alive` heartbeats while the store is waited for.
   */
  constructor(
    private readonly collections: Pick<Collections, 'itemUsage'>,
    private readonly quota: StorageQuota | undefined,
    private readonly req: NodeBlockRequest,
    stored: Array<StoredRow | null>,
    private readonly alive: () => void,
  ) {
    this.bytes = storedBytes(stored);
    this.unpaid = UNPAID.has(req.node.type);
  }

  /**
   * The block's pages hold `stored` now (another attempt of the block wrote some of them): the
   * total the next `record` writes is theirs, not what this attempt counted of its own.
   */
  recount(stored: Array<StoredRow | null>): void {
    this.bytes = storedBytes(stored);
  }

  /**
   * The item the row stores (`length`: its JSON's): counted, or for an unpaid node without room,
   * failed naming the quota (and that small item counted instead).
   */
  async admit(item: Item, length: number): Promise<Item> {
    const account = this.req.accountId;
    if (!this.quota || account === undefined || !this.unpaid) return this.count(item, length);
    const storage = this.quota;
    // Checked and counted in one step: rows ending together see each other.
    const taken = await waitingForStore(() => storage.take(account, length), this.alive);
    if (!taken.fits)
      return this.counted(
        failed({
          message: quotaFullMessage(taken.used, taken.quota),
          type: 'storage_quota_exceeded',
        }),
      );
    this.bytes += length;
    this.unrecorded += length;
    return item;
  }

  /** An item stored without a check (a row whose input failed: a small item of the block's own). */
  counted(item: Item): Item {
    return this.count(item, itemLength(item));
  }

  private count(item: Item, length: number): Item {
    this.bytes += length;
    if (this.quota && this.req.accountId !== undefined) {
      this.quota.pend(this.req.accountId, length);
      this.unrecorded += length;
    }
    return item;
  }

  /**
   * Records the block's total in the store (with each write of its pages: its one writer; never
   * two at once). The quota holds what the total adds until then.
   */
  async record(): Promise<void> {
    if (this.req.accountId === undefined) return;
    const recording = this.unrecorded;
    const usage = {
      runId: this.req.runId,
      nodeId: this.req.node.id,
      first: this.req.first,
      accountId: this.req.accountId,
      bytes: this.bytes,
    };
    await waitingForStore(() => recordBlockUsage(this.collections, usage), this.alive);
    this.unrecorded -= recording;
    this.quota?.settle(this.req.accountId, recording, true);
  }

  /** The block ended: what it counted but never recorded (a failed write) is no longer held. */
  close(): void {
    if (this.req.accountId !== undefined)
      this.quota?.settle(this.req.accountId, this.unrecorded, false);
    this.unrecorded = 0;
  }
}

/** The JSON bytes of stored rows; D38: a row carried over by reference is stored in its parent's page, not again. */
function storedBytes(rows: Array<StoredRow | null>): number {
  return rows.reduce((sum, row) => sum + (row && !row.carried ? itemLength(row.item) : 0), 0);
}

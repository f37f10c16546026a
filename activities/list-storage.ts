/**
 * D19, D35: the lists a run stores of its own, in its account's storage quota, as a block's items
 * are (activities/block-storage.ts): a file's rows (D31), a `batch` of a stored list, a joined item
 * too large for the history. Uncounted, one upload (counted once) could be copied into the store by
 * every run that reads it, and a chain of `batch` nodes copy a list again at each: storage every
 * tenant shares, for a start fee. Nothing in these lists is paid for, so a list with no room fails
 * its node, naming the quota, before the nodes after it run. What a list stores is recorded with
 * each write of its pages in one `item_usage` document (`_id` the list's first page's: its one
 * writer, replaced by a retry's count), removed with its run by retention and deletes.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Collections } from '../store/db';
import { recordBlockUsage } from '../store/item-usage';
import type { PageMeter } from '../store/page-writer';
import type { StorageQuota } from '../store/storage-quota';
import { quotaFullMessage, runAccount, STORAGE_QUOTA_EXCEEDED } from './files';

type C = Pick<Collections, 'itemUsage' | 'runs'>;

/** Where a list is stored: its run (and the run's account, when the workflow passed it) and its node. */
export interface ListPlace {
  runId: string;
  nodeId: string;
  accountId?: string;
}

/** The meter of one list's writes (store/page-writer.ts): each write's bytes taken from the quota, the total recorded. */
export class ListStorage implements PageMeter {
  private bytes = 0;
  /** Bytes taken from the quota that the store's sum does not hold yet (held there until recorded). */
  private unrecorded = 0;
  private account: Promise<string> | undefined;

  /** `what` names the list in the failure ("input 'rows'", "node 'b'"). */
  constructor(
    private readonly c: C,
    private readonly quota: StorageQuota,
    private readonly place: ListPlace,
    private readonly what: string,
  ) {}

  async take(bytes: number): Promise<void> {
    const taken = await this.quota.take(await this.accountId(), bytes);
    if (!taken.fits) {
      await this.record(); // what was stored before stays counted until the run is deleted
      throw ApplicationFailure.nonRetryable(
        `${this.what}: no room to store it: ${quotaFullMessage(taken.used, taken.quota)}`,
        STORAGE_QUOTA_EXCEEDED,
      );
    }
    this.bytes += bytes;
    this.unrecorded += bytes;
  }

  async record(): Promise<void> {
    const { runId, nodeId } = this.place;
    const accountId = await this.accountId();
    const recording = this.unrecorded;
    await recordBlockUsage(this.c, { runId, nodeId, first: 0, accountId, bytes: this.bytes });
    this.unrecorded -= recording;
    this.quota.settle(accountId, recording, true);
  }

  async abandon(): Promise<void> {
    const recording = this.unrecorded;
    this.unrecorded = 0;
    this.quota.settle(await this.accountId(), recording, false);
  }

  private accountId(): Promise<string> {
    this.account ??= runAccount({ collections: this.c }, this.place);
    return this.account;
  }
}

/**
 * A per-process cache of finished runs' public views. A finalized record never changes again
 * (D7: terminal is final), so repeated reads of it need no database round trip; entries still
 * expire after a minute so the retention sweep (D29) is not outlived for long. Bounded by the
 * bytes of the views held (their JSON size, which tracks their heap size within a small factor),
 * not by entries, since one run can carry thousands of items or megabytes of text.
 */
import { LRUCache } from 'lru-cache';
import type { RunView } from '../../domain/run-view';

interface Entry {
  accountId: string;
  view: RunView;
}

/** Default memory bound: 64 MiB of views (JSON bytes). */
export const FINISHED_RUN_CACHE_BYTES = 64 * 2 ** 20;

export interface FinishedRunCacheOptions {
  /** JSON bytes of the views held across all entries (default FINISHED_RUN_CACHE_BYTES). */
  maxBytes?: number;
  ttlMs?: number;
  /** The clock in milliseconds (tests); by default lru-cache's, `performance.now()`. */
  now?: () => number;
}

/**
 * LRU of finalized run views, keyed by run id and checked against the reading account. lru-cache
 * holds them: TTL, least recently used out first within `maxBytes`, a view larger than the whole
 * cache not kept (its maxEntrySize is maxSize).
 */
export class FinishedRunCache {
  /** Absent with a time to live of 0 (FINISHED_RUN_CACHE_MS=0): nothing is kept. */
  private readonly entries?: LRUCache<string, Entry>;

  constructor(opts: FinishedRunCacheOptions = {}) {
    const ttl = opts.ttlMs ?? 60_000;
    if (ttl <= 0) return;
    this.entries = new LRUCache<string, Entry>({
      ttl,
      maxSize: opts.maxBytes ?? FINISHED_RUN_CACHE_BYTES,
      sizeCalculation: (entry) => JSON.stringify(entry.view).length,
      // A given clock is read on every check (lru-cache otherwise reuses a reading for 1 ms).
      ...(opts.now && { perf: { now: opts.now }, ttlResolution: 0 }),
    });
  }

  /** The cached view of the account's run, or undefined (another account's run is a miss, never a hit). */
  get(accountId: string, runId: string): RunView | undefined {
    const entry = this.entries?.get(runId);
    return entry?.accountId === accountId ? entry.view : undefined;
  }

  /** Remembers a finalized run's view. */
  set(accountId: string, view: RunView): void {
    this.entries?.set(view.id, { accountId, view });
  }

  /** D39: drops a deleted run's view at once. */
  forget(runId: string): void {
    this.entries?.delete(runId);
  }

  /** Entries held (for tests and metrics). */
  get size(): number {
    return this.entries?.size ?? 0;
  }

  /** JSON bytes of the views held. */
  get heldBytes(): number {
    return this.entries?.calculatedSize ?? 0;
  }
}

/**
 * A per-process cache of finished runs' public views. A finalized record never changes again
 * (D7: terminal is final), so repeated reads of it need no database round trip; entries still
 * expire after a minute so the retention sweep (D29) is not outlived for long. Bounded by the
 * bytes of the views held (their JSON size, which tracks their heap size within a small factor),
 * not by entries, since one run can carry thousands of items or megabytes of text.
 */
import type { RunView } from '../../domain/run-view';

interface Entry {
  accountId: string;
  view: RunView;
  weight: number;
  expiresAtMs: number;
}

/** Default memory bound: 64 MiB of views (JSON bytes). */
export const FINISHED_RUN_CACHE_BYTES = 64 * 2 ** 20;

export interface FinishedRunCacheOptions {
  /** JSON bytes of the views held across all entries (default FINISHED_RUN_CACHE_BYTES). */
  maxBytes?: number;
  ttlMs?: number;
}

/** LRU of finalized run views, keyed by run id and checked against the reading account. */
export class FinishedRunCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly ttlMs: number;

  constructor(opts: FinishedRunCacheOptions = {}) {
    this.maxBytes = opts.maxBytes ?? FINISHED_RUN_CACHE_BYTES;
    this.ttlMs = opts.ttlMs ?? 60_000;
  }

  /** The cached view of the account's run, or undefined (another account's run is a miss, never a hit). */
  get(accountId: string, runId: string, nowMs = Date.now()): RunView | undefined {
    const entry = this.entries.get(runId);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= nowMs) {
      this.remove(runId, entry);
      return undefined;
    }
    if (entry.accountId !== accountId) return undefined;
    // Map order is insertion order: re-inserting makes this the most recently used.
    this.entries.delete(runId);
    this.entries.set(runId, entry);
    return entry.view;
  }

  /** Remembers a finalized run's view; a view larger than the whole cache is not kept, nor anything with a TTL of 0. */
  set(accountId: string, view: RunView, nowMs = Date.now()): void {
    if (this.ttlMs <= 0) return;
    const weight = JSON.stringify(view).length;
    if (weight > this.maxBytes) return;
    const previous = this.entries.get(view.id);
    if (previous) this.remove(view.id, previous);
    this.entries.set(view.id, { accountId, view, weight, expiresAtMs: nowMs + this.ttlMs });
    this.bytes += weight;
    for (const [id, oldest] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(id, oldest);
    }
  }

  /** D39: drops a deleted run's view at once. */
  forget(runId: string): void {
    const entry = this.entries.get(runId);
    if (entry) this.remove(runId, entry);
  }

  /** Entries held (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  /** JSON bytes of the views held. */
  get heldBytes(): number {
    return this.bytes;
  }

  private remove(runId: string, entry: Entry): void {
    this.entries.delete(runId);
    this.bytes -= entry.weight;
  }
}

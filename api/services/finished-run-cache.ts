/**
 * A per-process cache of finished runs' public views. A finalized record never changes again
 * (D7: terminal is final), so repeated reads of it need no database round trip; entries still
 * expire after a minute so the retention sweep (D29) is not outlived for long. Bounded by the
 * number of output items held, not by entries, since one run can carry thousands.
 */
import type { RunView } from '../response-schemas';

interface Entry {
  accountId: string;
  view: RunView;
  weight: number;
  expiresAtMs: number;
}

export interface FinishedRunCacheOptions {
  /** Output items held across all entries (default 100,000). */
  maxItems?: number;
  ttlMs?: number;
}

/** LRU of finalized run views, keyed by run id and checked against the reading account. */
export class FinishedRunCache {
  private readonly entries = new Map<string, Entry>();
  private items = 0;
  private readonly maxItems: number;
  private readonly ttlMs: number;

  constructor(opts: FinishedRunCacheOptions = {}) {
    this.maxItems = opts.maxItems ?? 100_000;
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
    const weight = 1 + Object.values(view.output ?? {}).reduce((n, items) => n + items.length, 0);
    if (weight > this.maxItems || this.ttlMs <= 0) return;
    const previous = this.entries.get(view.id);
    if (previous) this.remove(view.id, previous);
    this.entries.set(view.id, { accountId, view, weight, expiresAtMs: nowMs + this.ttlMs });
    this.items += weight;
    for (const [id, oldest] of this.entries) {
      if (this.items <= this.maxItems) break;
      this.remove(id, oldest);
    }
  }

  /** Entries held (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  private remove(runId: string, entry: Entry): void {
    this.entries.delete(runId);
    this.items -= entry.weight;
  }
}

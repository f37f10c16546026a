/**
 * A small per-process cache: entries live at most `ttlMs`, at most `maxEntries` are held (the
 * least recently used goes first), and concurrent misses of one key share one load, so a burst
 * of requests for a cold key costs one store round trip, not one each.
 */

interface Entry<V> {
  value: V;
  expiresAtMs: number;
}

export interface TtlCacheOptions {
  ttlMs: number;
  maxEntries: number;
}

export class TtlCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly loading = new Map<string, Promise<V>>();

  constructor(private readonly opts: TtlCacheOptions) {}

  /** The fresh cached value, or undefined. */
  peek(key: string, nowMs = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= nowMs) {
      this.entries.delete(key);
      return undefined;
    }
    // Map order is insertion order: re-inserting makes this the most recently used.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /**
   * The cached value, else `load()`'s (shared with concurrent callers of the same key). A loaded
   * value is kept only when `keep(value)` says so (e.g. not a "not found"), so misses stay misses.
   */
  async get(
    key: string,
    load: () => Promise<V>,
    keep: (value: V) => boolean = () => true,
  ): Promise<V> {
    const cached = this.peek(key);
    if (cached !== undefined) return cached;
    let pending = this.loading.get(key);
    if (!pending) {
      pending = load()
        .then((value) => {
          if (keep(value)) this.set(key, value);
          return value;
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    return pending;
  }

  set(key: string, value: V, nowMs = Date.now()): void {
    if (this.opts.ttlMs <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAtMs: nowMs + this.opts.ttlMs });
    if (this.entries.size > this.opts.maxEntries)
      this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Entries held (tests). */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * D6: the per-process cache of live API keys. A found key is remembered for at most
 * KEY_CACHE_MS, so a revoked key is refused by every process within that time while steady
 * traffic costs no lookup per request. Unknown keys are never remembered: a new key works at once.
 */
import type { Collections } from '../../store/db';
import { findLiveKey, hashKey, isKeyLive } from '../../store/accounts';
import type { ApiKeyDoc } from '../../store/documents';
import { TtlCache } from '../../lib/cache/ttl-cache';

/** D6: the longest a process may go on accepting a revoked key. */
export const KEY_CACHE_MS = 2_000;

/** Per-process cache of live keys by secret hash (built once per API in createApp). */
export class KeyCache {
  private readonly cache: TtlCache<ApiKeyDoc | null>;
  private readonly liveIds: TtlCache<boolean>;

  constructor(
    private readonly collections: Pick<Collections, 'apiKeys'>,
    opts: { ttlMs?: number; maxEntries?: number } = {},
  ) {
    const cacheOptions = {
      ttlMs: Math.min(opts.ttlMs ?? KEY_CACHE_MS, KEY_CACHE_MS),
      maxEntries: opts.maxEntries ?? 10_000,
    };
    this.cache = new TtlCache(cacheOptions);
    this.liveIds = new TtlCache(cacheOptions);
  }

  /**
   * Whether key `keyId` is still live, remembered for at most KEY_CACHE_MS like `find`: a signed
   * link or an open stream of a revoked key stops working within that time (D6).
   */
  isLive(keyId: string): Promise<boolean> {
    return this.liveIds.get(keyId, () => isKeyLive(this.collections, keyId));
  }

  /** The live key of a presented secret, or null (unknown or revoked). */
  find(secret: string): Promise<ApiKeyDoc | null> {
    return this.cache.get(
      hashKey(secret),
      () => findLiveKey(this.collections, secret),
      (key) => key !== null,
    );
  }
}

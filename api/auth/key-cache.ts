/**
 * D6: the per-process cache of live API keys. A found key is remembered for at most
 * KEY_CACHE_MS, so a revoked key is refused by every process within that time while steady
 * traffic costs no lookup per request. Unknown keys are never remembered: a new key works at once.
 * lru-cache holds the entries (TTL, a bound on their number, least recently used out first) and
 * runs one lookup per key at a time, so a burst of requests with a cold key costs one round trip.
 */
import { LRUCache } from 'lru-cache';
import type { Collections } from '../../store/db';
import { findLiveKey, hashKey, isKeyLive } from '../../store/accounts';
import type { ApiKeyDoc } from '../../store/documents';

/** D6: the longest a process may go on accepting a revoked key. */
export const KEY_CACHE_MS = 2_000;
const MAX_KEYS = 10_000;

/** Per-process cache of live keys by secret hash (built once per API in createApp). */
export class KeyCache {
  /** By secret hash; a lookup gets the secret itself as its context. */
  private readonly keys: LRUCache<string, ApiKeyDoc, string>;
  private readonly liveIds: LRUCache<string, boolean>;

  constructor(private readonly collections: Pick<Collections, 'apiKeys' | 'apiKeyHashes'>) {
    this.keys = new LRUCache({
      ttl: KEY_CACHE_MS,
      max: MAX_KEYS,
      // undefined (an unknown or revoked key) is answered to every waiter but never stored.
      fetchMethod: async (_hash, _stale, { context: secret }) =>
        (await findLiveKey(this.collections, secret)) ?? undefined,
    });
    this.liveIds = new LRUCache({
      ttl: KEY_CACHE_MS,
      max: MAX_KEYS,
      fetchMethod: (keyId) => isKeyLive(this.collections, keyId),
    });
  }

  /**
   * Whether key `keyId` is still live, remembered for at most KEY_CACHE_MS like `find`: a signed
   * link or an open stream of a revoked key stops working within that time (D6).
   */
  async isLive(keyId: string): Promise<boolean> {
    return (await this.liveIds.fetch(keyId)) ?? false;
  }

  /** The live key of a presented secret, or null (unknown or revoked). */
  async find(secret: string): Promise<ApiKeyDoc | null> {
    return (await this.keys.fetch(hashKey(secret), { context: secret })) ?? null;
  }
}

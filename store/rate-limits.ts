/**
 * D16 rate-limit windows, shared by every API process through MongoDB: fixed one-minute
 * windows per key and bucket, one document each, counted by an atomic `$inc` upsert so a
 * check costs exactly one round trip (and a burst of checks one, api/limits/rate-counter.ts).
 */
import type { Collections } from './db';
import { isDuplicateKey } from './ledger';

export type RateLimitBucket = 'starts' | 'requests';

export const WINDOW_MS = 60_000;

export interface WindowCount {
  /** Requests counted in this window so far, these included. */
  count: number;
  windowStartMs: number;
  windowEndMs: number;
}

/** When the window holding `nowMs` began. */
export function windowStartOf(nowMs: number): number {
  return Math.floor(nowMs / WINDOW_MS) * WINDOW_MS;
}

/** The `_id` of the window document that counts `bucket` of `keyId` at `nowMs`. */
export function windowId(keyId: string, bucket: RateLimitBucket, nowMs: number): string {
  return `${keyId}:${bucket}:${Math.floor(nowMs / WINDOW_MS)}`;
}

/** Counts `n` requests of `keyId` in the current window of `bucket` and returns the window's count after them. */
export async function countRequest(
  c: Pick<Collections, 'rateLimits'>,
  keyId: string,
  bucket: RateLimitBucket,
  nowMs = Date.now(),
  n = 1,
): Promise<WindowCount> {
  const windowStartMs = windowStartOf(nowMs);
  const windowEndMs = windowStartMs + WINDOW_MS;
  const filter = { _id: windowId(keyId, bucket, nowMs) };
  const update = {
    $inc: { count: n },
    // Kept one extra window so a process whose clock lags a little still finds its window.
    $setOnInsert: {
      key_id: keyId,
      bucket,
      window_start: new Date(windowStartMs),
      expires_at: new Date(windowEndMs + WINDOW_MS),
    },
  };
  for (let attempt = 0; ; attempt++) {
    try {
      const doc = await c.rateLimits.findOneAndUpdate(filter, update, {
        upsert: true,
        returnDocument: 'after',
      });
      return { count: doc?.count ?? n, windowStartMs, windowEndMs };
    } catch (err) {
      // The first two hits of a window may race on the upsert; MongoDB retries that itself, but
      // a server that does not answers E11000 to the loser, whose retry then finds the document.
      if (!isDuplicateKey(err) || attempt >= 1) throw err;
    }
  }
}

/**
 * D16 counting with one MongoDB write per burst instead of one per request. While the count of a
 * key's window is being written, the requests that arrive for the same window wait and are
 * counted together by the next write (`$inc: n`, a group commit). The `$inc` reserves n
 * consecutive counts, so every request still learns its own exact position in the window:
 * sequential requests see exactly what one write per request would show, and under concurrency
 * the limit is kept to the request, across processes too (on MongoDB; FerretDB 1.x may lose one
 * of two concurrent `$inc`s of a document, as it did before batching).
 *
 * Why: the window document is one hot document per key, and every authenticated request writes
 * it. On a database with one writer (FerretDB/SQLite here) that write queued behind everything
 * else; 50 concurrent reads of one key now make a handful of writes, not 50 (bench P5).
 */
import type { Collections } from '../../store/db';
import {
  countRequest,
  windowId,
  type RateLimitBucket,
  type WindowCount,
} from '../../store/rate-limits';

interface Waiter {
  resolve(count: WindowCount): void;
  reject(err: unknown): void;
}

/** The requests of one window waiting for a write, and whether one is under way. */
interface Lane {
  writing: boolean;
  waiting: Waiter[];
}

/** Per-process D16 counter, built once per API (createApp). */
export class RateCounter {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly collections: Pick<Collections, 'rateLimits'>) {}

  /** Counts one request of `keyId` in `bucket` and returns the window's count with it (its position). */
  count(keyId: string, bucket: RateLimitBucket, nowMs = Date.now()): Promise<WindowCount> {
    const id = windowId(keyId, bucket, nowMs);
    let lane = this.lanes.get(id);
    if (!lane) {
      lane = { writing: false, waiting: [] };
      this.lanes.set(id, lane);
    }
    const promise = new Promise<WindowCount>((resolve, reject) =>
      lane.waiting.push({ resolve, reject }),
    );
    if (!lane.writing) void this.write(id, lane, keyId, bucket, nowMs);
    return promise;
  }

  /** Lanes with a write under way or requests waiting (tests assert none is left behind). */
  get size(): number {
    return this.lanes.size;
  }

  private async write(
    id: string,
    lane: Lane,
    keyId: string,
    bucket: RateLimitBucket,
    nowMs: number,
  ): Promise<void> {
    const batch = lane.waiting.splice(0);
    lane.writing = true;
    try {
      const total = await countRequest(this.collections, keyId, bucket, nowMs, batch.length);
      // The batch holds the last n counts of the window, in arrival order.
      batch.forEach((waiter, i) =>
        waiter.resolve({ ...total, count: total.count - (batch.length - 1 - i) }),
      );
    } catch (err) {
      for (const waiter of batch) waiter.reject(err);
    } finally {
      lane.writing = false;
      if (lane.waiting.length > 0) void this.write(id, lane, keyId, bucket, nowMs);
      else this.lanes.delete(id);
    }
  }
}

/**
 * D16 counting with few MongoDB writes: a group commit, plus short leases while one key is busy.
 *
 * - **Group commit.** While the count of a key's window is being written, the requests that arrive
 *   for the same window wait and are counted together by the next write (`$inc: n`). The `$inc`
 *   reserves n consecutive counts, so every request learns its own position in the window.
 * - **Leases.** When a write carries concurrent requests (or refills a lease that was used up),
 *   it also reserves about LEASE_MS of this process's recent traffic for the key beyond them, at
 *   most 1/LEASE_SHARE of what the window had left. The next requests take their positions from
 *   the lease, in order, with no write. A lease lives LEASE_TTL_MS at most; what is left of it then
 *   is given back (`$inc` by minus that much), so an unused lease costs the key nothing.
 *
 * What this keeps of D16: the limit is never exceeded, since every position handed out was
 * counted in MongoDB first; requests one at a time never start a lease, so they see exactly what
 * one write per request would show, across processes too; within one process, concurrent
 * requests get consecutive positions. What it gives up, only while a key is busy in several
 * processes: another process's unused lease counts as used, so a request near the limit can be
 * refused up to LEASE_TTL_MS early (by at most that lease's unused part, a lease being at most
 * 1/LEASE_SHARE of what was left); and `X-RateLimit-Remaining` from a lease does not see the
 * other processes' counts of the last LEASE_TTL_MS.
 *
 * Why: the window document is one hot document per key, and every authenticated request counts
 * itself there. On a database with one writer (FerretDB/SQLite here) that write queued behind
 * everything else, and even batched it was most of the API's store traffic under load (bench P5:
 * ~280 writes/s for 5,000 reads/s of one key; with leases about 1000 / LEASE_MS).
 */
import type { Collections } from '../../store/db';
import {
  countRequest,
  WINDOW_MS,
  windowId,
  windowStartOf,
  type RateLimitBucket,
  type WindowCount,
} from '../../store/rate-limits';

/** A lease reserves about this much of a busy key's recent traffic. */
export const LEASE_MS = 100;
/** The shortest stretch of traffic a rate is taken from, so one burst does not look like a flood. */
const MIN_SAMPLE_MS = 10;
/** The longest a lease is held; what is left of it then is given back. */
export const LEASE_TTL_MS = 250;
/** A lease takes at most 1/LEASE_SHARE of what the window has left. */
export const LEASE_SHARE = 16;

interface Waiter {
  resolve(count: WindowCount): void;
  reject(err: unknown): void;
}

/** Counts reserved by an earlier write and not yet handed out: positions next..last. */
interface Lease {
  next: number;
  last: number;
  expiresAt: number;
}

/** One window of one key and bucket in this process. */
interface Lane {
  id: string;
  keyId: string;
  bucket: RateLimitBucket;
  windowStartMs: number;
  writing: boolean;
  /** Requests waiting for the next write, in arrival order. */
  waiting: Waiter[];
  lease: Lease | null;
  /** The window's count after this process's last write. */
  lastCount: number;
  /** Requests since the last write began, and when it began (process clock): the recent rate. */
  arrivals: number;
  since: number;
  /** When the last request came (process clock). */
  lastArrival: number;
  /** The last write leased: keep leasing while the traffic lasts. */
  leasing: boolean;
  /** Gives an unused lease back once it expires with nobody asking. */
  expiry?: NodeJS.Timeout;
}

/** Per-process D16 counter, built once per API (createApp). */
export class RateCounter {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly collections: Pick<Collections, 'rateLimits'>) {}

  /**
   * Counts one request of `keyId` in `bucket` and returns the window's count with it (its
   * position). `limit` is the bucket's limit for the key: a lease never reserves past a share of
   * what is left of it. `nowMs` picks the window; rates and lease lifetimes use the process clock.
   */
  count(
    keyId: string,
    bucket: RateLimitBucket,
    limit: number,
    nowMs = Date.now(),
  ): Promise<WindowCount> {
    const id = windowId(keyId, bucket, nowMs);
    let lane = this.lanes.get(id);
    if (!lane) {
      lane = {
        id,
        keyId,
        bucket,
        windowStartMs: windowStartOf(nowMs),
        writing: false,
        waiting: [],
        lease: null,
        lastCount: 0,
        arrivals: 0,
        since: performance.now(),
        lastArrival: 0,
        leasing: false,
      };
      this.lanes.set(id, lane);
    }
    lane.arrivals++;
    lane.lastArrival = performance.now();
    const leased = this.takeLeased(lane);
    if (leased) return Promise.resolve(leased);
    const promise = new Promise<WindowCount>((resolve, reject) =>
      lane.waiting.push({ resolve, reject }),
    );
    if (!lane.writing) void this.write(lane, limit);
    return promise;
  }

  /** Lanes with a write under way, requests waiting, a lease held or a key busy in the last LEASE_TTL_MS (tests assert none is left behind). */
  get size(): number {
    return this.lanes.size;
  }

  private async write(lane: Lane, limit: number): Promise<void> {
    const now = performance.now();
    const batch = lane.waiting.splice(0);
    const returned = this.dropLease(lane); // an expired lease's rest is given back by this write
    const extra = leaseSize(lane, batch.length, limit, now);
    lane.leasing = extra > 0;
    lane.arrivals = 0;
    lane.since = now;
    lane.writing = true;
    try {
      const n = batch.length + extra;
      const total = await countRequest(
        this.collections,
        lane.keyId,
        lane.bucket,
        lane.windowStartMs,
        n - returned,
      );
      // The window's last n counts are this write's: the batch's, in arrival order, then the lease.
      const first = total.count - n + 1;
      batch.forEach((waiter, i) => waiter.resolve({ ...total, count: first + i }));
      lane.lastCount = total.count;
      if (extra > 0) {
        lane.lease = {
          next: first + batch.length,
          last: total.count,
          expiresAt: performance.now() + LEASE_TTL_MS,
        };
      }
    } catch (err) {
      for (const waiter of batch) waiter.reject(err);
    } finally {
      lane.writing = false;
      // Requests that arrived during the write take the new lease first; the rest write next.
      while (lane.waiting.length > 0) {
        const leased = this.takeLeased(lane);
        if (!leased) break;
        lane.waiting.shift()!.resolve(leased);
      }
      if (lane.waiting.length > 0) void this.write(lane, limit);
      else if (lane.lease) this.armExpiry(lane);
      else this.lanes.delete(lane.id);
    }
  }

  /** The next position of the lane's live lease, or undefined (none, used up or expired). */
  private takeLeased(lane: Lane): WindowCount | undefined {
    const lease = lane.lease;
    if (!lease || lease.next > lease.last || performance.now() >= lease.expiresAt) return undefined;
    const windowStartMs = lane.windowStartMs;
    return { count: lease.next++, windowStartMs, windowEndMs: windowStartMs + WINDOW_MS };
  }

  /** Ends the lane's lease; returns how many of its counts were never handed out. */
  private dropLease(lane: Lane): number {
    clearTimeout(lane.expiry);
    const unused = lane.lease ? lane.lease.last - lane.lease.next + 1 : 0; // next is at most last + 1
    lane.lease = null;
    return unused;
  }

  /** Ends the lane's lease when it expires: see expire. */
  private armExpiry(lane: Lane): void {
    clearTimeout(lane.expiry);
    const delay = Math.max(0, lane.lease!.expiresAt - performance.now());
    lane.expiry = setTimeout(() => this.expire(lane), delay);
    lane.expiry.unref();
  }

  /**
   * Gives back what is left of an expired lease, and forgets the lane once its key has been idle
   * for LEASE_TTL_MS. A lane still in use is kept, so its next write leases at its current rate.
   */
  private expire(lane: Lane): void {
    if (lane.writing || lane.waiting.length > 0) return; // that write gives the lease back
    const unused = this.dropLease(lane);
    // Best effort: a give-back that fails leaves those counts used, the safe side of the limit.
    if (unused > 0)
      countRequest(this.collections, lane.keyId, lane.bucket, lane.windowStartMs, -unused).catch(
        () => {},
      );
    if (performance.now() - lane.lastArrival >= LEASE_TTL_MS) {
      this.lanes.delete(lane.id);
      return;
    }
    lane.expiry = setTimeout(() => this.expire(lane), LEASE_TTL_MS);
    lane.expiry.unref();
  }
}

/**
 * How many counts beyond the batch the next write reserves: none unless the key is busy in this
 * process (concurrent requests now, or a lease used up); else about LEASE_MS of its recent rate,
 * capped by a share of what the window has left, so near the limit every request writes.
 */
function leaseSize(lane: Lane, batch: number, limit: number, now: number): number {
  if (batch <= 1 && !lane.leasing) return 0;
  const recent = (lane.arrivals * LEASE_MS) / Math.max(MIN_SAMPLE_MS, now - lane.since);
  const left = limit - lane.lastCount - batch;
  return Math.max(0, Math.min(Math.floor(recent), Math.floor(left / LEASE_SHARE)));
}

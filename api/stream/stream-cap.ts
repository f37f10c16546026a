/**
 * The per-key cap on open streams (docs/api.md "Connections"): a key holds at most
 * `STREAM_MAX_PER_KEY` open SSE streams in one API process; one more is a 429
 * `too_many_streams` with `Retry-After`, answered before anything starts (a streaming start
 * is refused before its run is created, so nothing is billed).
 *
 * The count is per process, in memory: a stream is a socket of this process, so this process
 * knows exactly when it opens and ends, at no store round trip. A count shared in MongoDB would
 * cost two writes per stream and, for the streams of a process that crashed, would stay counted
 * until some lease expired. The honest bound for a key is therefore the cap times the number of
 * API processes behind the load balancer.
 */
import { RateLimitError } from '../../domain/errors';

/** Seconds a refused client waits before it tries again: streams end when their runs do. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/** 429 `too_many_streams`. */
export class TooManyStreamsError extends RateLimitError {
  constructor(max: number) {
    super(
      `This API key already has ${max} open streams, the most it may hold: close one, or poll GET /api/v1/runs/{runId} instead.`,
      STREAM_RETRY_AFTER_SECONDS,
      'too_many_streams',
    );
  }
}

/** Open streams per key in this process. */
export class StreamCap {
  private readonly open = new Map<string, number>();

  constructor(private readonly maxPerKey: number) {}

  /** Takes one of `keyId`'s slots, or throws TooManyStreamsError; the returned release is idempotent. */
  take(keyId: string): () => void {
    const count = this.open.get(keyId) ?? 0;
    if (count >= this.maxPerKey) throw new TooManyStreamsError(this.maxPerKey);
    this.open.set(keyId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(keyId) ?? 1) - 1;
      if (left > 0) this.open.set(keyId, left);
      else this.open.delete(keyId); // no entry outlives a key's last stream
    };
  }

  /** Streams `keyId` holds open in this process (tests, metrics). */
  count(keyId: string): number {
    return this.open.get(keyId) ?? 0;
  }
}

/**
 * Waiting out a store outage: an operation tried again with growing pauses while it fails in a
 * way worth waiting for, for a bounded time. A big node's block uses it for its pages
 * (activities/store-wait.ts), a worker's codec for the key ring and run secrets it has never read
 * (lib/codec/data-converter.ts).
 */

export interface RetryPolicy {
  /** How long, from the first try, another try may still start. */
  forMs: number;
  /** Which failures are worth another try (the rest are thrown at once). */
  retryable: (err: unknown) => boolean;
  /** The first pause; each next one doubles, up to `maxPauseMs`. */
  firstPauseMs?: number;
  maxPauseMs?: number;
  /** How to pause (an activity's is cancellable and heartbeats); a timer by default. */
  pause?: (ms: number) => Promise<void>;
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs `op`, and again after each pause while it fails retryably within `forMs`; past that, its last error. */
export async function retrying<T>(op: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  const deadline = Date.now() + policy.forMs;
  const pause = policy.pause ?? timer;
  const max = policy.maxPauseMs ?? 2_000;
  for (let wait = policy.firstPauseMs ?? 100; ; wait = Math.min(wait * 2, max)) {
    try {
      return await op();
    } catch (err) {
      if (!policy.retryable(err) || Date.now() + wait > deadline) throw err;
      await pause(wait);
    }
  }
}

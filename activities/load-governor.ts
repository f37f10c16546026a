/**
 * Keeps the worker responsive under big batches (D36): once its CPU is saturated, more provider
 * calls in flight add no throughput, only a queue of ready callbacks that every other run's work
 * (a small run's workflow activation, its finalize) waits behind. The governor samples the event
 * loop's delay and lowers the scheduler's slot limit while it is over the target (multiplicative
 * decrease), raising it back a few slots at a time while it is under (additive increase).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { CallScheduler } from './call-scheduler';

export interface GovernorOptions {
  /** Event-loop delay (p99 over a sample window, ms) above which the slots shrink; 0 turns the governor off. */
  lagTargetMs: number;
  /** Sample window. */
  everyMs?: number;
  /** Slots never go below this. */
  minSlots?: number;
}

/** Starts governing `scheduler`; returns the function that stops it. */
export function governCalls(scheduler: CallScheduler, opts: GovernorOptions): () => void {
  if (opts.lagTargetMs <= 0) return () => undefined;
  const minSlots = opts.minSlots ?? 4;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const timer = setInterval(() => {
    const lagMs = histogram.percentile(99) / 1e6 - 10; // the resolution's own wait is not delay
    histogram.reset();
    const limit = scheduler.currentLimit;
    // Only calls in flight can be the cause: an idle scheduler keeps its limit.
    if (lagMs > opts.lagTargetMs && scheduler.active() >= limit / 2)
      scheduler.setLimit(Math.max(minSlots, limit * 0.7));
    else if (lagMs < opts.lagTargetMs / 2) scheduler.setLimit(limit + 4);
  }, opts.everyMs ?? 500);
  timer.unref();
  return () => {
    clearInterval(timer);
    histogram.disable();
  };
}

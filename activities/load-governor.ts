/**
 * Keeps the worker responsive under big batches (D36): once its CPU is saturated, more provider
 * calls in flight add no throughput, only a queue of ready callbacks that every other run's work
 * (a small run's workflow activation, its finalize) waits behind. The governor samples the event
 * loop's delay and lowers the scheduler's slot limit while it is over the target (multiplicative
 * decrease), raising it back a few slots at a time while it is under (additive increase).
 *
 * The target depends on who shares the worker: with the calls of one account only, the looser
 * `lagTargetMs` (that account's batch gets the worker's speed); with two or more accounts' calls
 * active or waiting, the stricter `sharedLagTargetMs`. A small run that calls no provider (the
 * demo workflow) is invisible to the scheduler until its workflow task is already waiting, and
 * the governor takes seconds to bring the lag down, so a worker that several accounts use keeps
 * its event loop ready for them beforehand (D36, docs/architecture.md "Sharing the workers").
 *
 * One sampler per process whatever the number of workers in it (the tests build many): each
 * governed scheduler is held weakly, so a dropped worker's scheduler leaves with it.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { CallScheduler } from './call-scheduler';

export interface GovernorOptions {
  /** Event-loop delay (p99 over a sample window, ms) above which the slots shrink while one account has calls; 0 turns the governor off. */
  lagTargetMs: number;
  /** The same while two or more accounts have calls in flight or waiting; `lagTargetMs` when not given. */
  sharedLagTargetMs?: number;
  /** Slots never go below this. */
  minSlots?: number;
}

/** Sample window. */
const EVERY_MS = 500;
/** The histogram's resolution: its own wait is not delay. */
const RESOLUTION_MS = 10;

const governed = new Set<{ scheduler: WeakRef<CallScheduler>; opts: GovernorOptions }>();
let sampler: { histogram: IntervalHistogram; timer: NodeJS.Timeout } | undefined;

/** Puts `scheduler` under the governor. */
export function governCalls(scheduler: CallScheduler, opts: GovernorOptions): void {
  if (opts.lagTargetMs <= 0) return;
  governed.add({ scheduler: new WeakRef(scheduler), opts });
  if (sampler) return;
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  const timer = setInterval(() => {
    const lagMs = histogram.percentile(99) / 1e6 - RESOLUTION_MS;
    histogram.reset();
    for (const entry of governed) {
      const s = entry.scheduler.deref();
      if (!s) {
        governed.delete(entry);
        continue;
      }
      adjust(s, lagMs, entry.opts);
    }
    if (governed.size === 0 && sampler) {
      clearInterval(sampler.timer);
      sampler.histogram.disable();
      sampler = undefined;
    }
  }, EVERY_MS);
  timer.unref();
  sampler = { histogram, timer };
}

/** The lag target now: the shared one while two or more accounts have calls in flight or waiting. */
export function lagTarget(scheduler: CallScheduler, opts: GovernorOptions): number {
  return scheduler.busyAccounts > 1
    ? (opts.sharedLagTargetMs ?? opts.lagTargetMs)
    : opts.lagTargetMs;
}

/** One step of the limit: down 30% while lagging with the slots in use, up 4 while well under the target. */
export function adjust(scheduler: CallScheduler, lagMs: number, opts: GovernorOptions): void {
  const limit = scheduler.currentLimit;
  const target = lagTarget(scheduler, opts);
  // Only calls in flight can be the cause: a scheduler using few of its slots keeps its limit.
  if (lagMs > target && scheduler.active() >= limit / 2)
    scheduler.setLimit(Math.max(opts.minSlots ?? 4, limit * 0.7));
  else if (lagMs < target / 2) scheduler.setLimit(limit + 4);
}

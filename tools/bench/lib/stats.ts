/** Latency recording, percentiles and a closed-loop load driver (every "client" sends its next request when the last one answered). */

export interface Summary {
  count: number;
  errors: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
  /** Completed operations per second over the measured window. */
  throughput: number;
  elapsedMs: number;
}

/** The q-quantile (0..1) of sorted values, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

export function summarize(samples: readonly number[], elapsedMs: number, errors = 0): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    count: sorted.length,
    errors,
    p50: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    p99: quantile(sorted, 0.99),
    max: sorted.at(-1) ?? NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
    throughput: elapsedMs > 0 ? (sorted.length / elapsedMs) * 1000 : NaN,
    elapsedMs,
  };
}

export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export interface LoadOptions {
  concurrency: number;
  /** Measured window. */
  durationMs: number;
  /** Requests before the window opens are sent but not counted. */
  warmupMs?: number;
  /** Stop early after this many measured operations. */
  maxOps?: number;
}

/**
 * Runs `op` from `concurrency` parallel loops for warmup + duration. Only operations that
 * *start* inside the measured window give latencies; throughput is completions inside the window / window.
 * The first error message of each kind is kept so a failing run says why.
 */
export async function closedLoop(
  opts: LoadOptions,
  op: (worker: number, seq: number) => Promise<void>,
): Promise<Summary & { errorKinds: Record<string, number> }> {
  const warmup = opts.warmupMs ?? 0;
  const start = nowMs();
  const windowStart = start + warmup;
  const windowEnd = windowStart + opts.durationMs;
  const samples: number[] = [];
  const errorKinds: Record<string, number> = {};
  let errors = 0;
  let seq = 0;
  let completedInWindow = 0;
  let lastEnd = windowStart;
  const loop = async (worker: number) => {
    for (;;) {
      const t0 = nowMs();
      if (t0 >= windowEnd) return;
      if (opts.maxOps !== undefined && samples.length + errors >= opts.maxOps) return;
      const measured = t0 >= windowStart;
      try {
        await op(worker, seq++);
        const t1 = nowMs();
        if (measured) samples.push(t1 - t0);
        if (t1 >= windowStart && t1 <= windowEnd) completedInWindow++;
        lastEnd = Math.max(lastEnd, t1);
      } catch (err) {
        if (measured) errors++;
        const kind = (err as Error).message?.slice(0, 160) ?? String(err);
        errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
        // An erroring target must not become a hot loop that starves everything else.
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, (_, i) => loop(i)));
  // Throughput: completions inside the window over the window (stopping early with maxOps shortens it).
  const elapsed = Math.max(1, Math.min(windowEnd, lastEnd) - windowStart);
  const summary = summarize(samples, elapsed, errors);
  summary.throughput = (completedInWindow / elapsed) * 1000;
  return { ...summary, errorKinds };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function fmt(n: number | null | undefined, digits = 1): string {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  return n.toFixed(digits);
}

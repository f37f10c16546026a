/**
 * Measures how late the event loop runs a short timer: the largest delay over the last few
 * windows is what the worker's liveness probe compares with its limit. A timer (not
 * perf_hooks' histogram) because the probe needs "how late was the loop recently", including a
 * block that has just ended, with no per-probe reset.
 */

const TICK_MS = 250;
/** How many recent one-second windows the maximum covers. */
const WINDOWS = 10;

export interface LoopLagWatch {
  /** The largest lag (ms) seen in the last ~10 s, including the current, still running delay. */
  recentMaxMs(): number;
  stop(): void;
}

/** Starts sampling the event loop's lag; the timer does not keep the process alive. */
export function watchEventLoopLag(): LoopLagWatch {
  const windows: number[] = new Array<number>(WINDOWS).fill(0);
  let windowStart = Date.now();
  let expected = Date.now() + TICK_MS;
  const timer = setInterval(() => {
    const now = Date.now();
    const late = Math.max(0, now - expected);
    expected = now + TICK_MS;
    if (now - windowStart >= 1_000) {
      windows.shift();
      windows.push(0);
      windowStart = now;
    }
    windows[windows.length - 1] = Math.max(windows[windows.length - 1], late);
  }, TICK_MS);
  timer.unref();
  return {
    recentMaxMs: () => Math.max(...windows, Math.max(0, Date.now() - expected)),
    stop: () => clearInterval(timer),
  };
}

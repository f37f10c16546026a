/**
 * Timers with a summary (D33). CancellationScope.withTimeout starts an unnamed timer, which the
 * Temporal UI shows as "1 (1h)"; this does the same with a `sleep` that carries a summary.
 * Same commands in the same order (the timer first, then the work), so runs started before it replay.
 */
import { CancellationScope, sleep } from '@temporalio/workflow';

/** Runs `fn` in a scope that is cancelled after `ms`, with a timer the UI names `summary`. */
export async function withNamedTimeout<T>(
  ms: number,
  summary: string,
  fn: () => Promise<T>,
): Promise<T> {
  const work = new CancellationScope({ cancellable: true });
  const timer = new CancellationScope({ cancellable: true });
  timer
    .run(() => sleep(ms, { summary }))
    .then(
      () => work.cancel(),
      () => undefined, // the work finished (or the run was cancelled) first
    );
  try {
    return await work.run(fn);
  } finally {
    if (!timer.consideredCancelled) timer.cancel();
  }
}

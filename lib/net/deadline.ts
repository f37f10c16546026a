/**
 * A signal that aborts after `ms`, or as soon as another signal (an activity's cancel) does.
 * `AbortSignal.any([AbortSignal.timeout(ms), …])` is not used: on Node 20 the garbage collector
 * can drop the timeout signal it holds only weakly, and its timer then never fires, so a server
 * that sends headers and then trickles its body held a call past its `timeout_ms` for good. Here
 * the timer is an ordinary `setTimeout` whose callback keeps the controller (and the signal) alive.
 */

/** The signal, and `done()` to clear the timer and listeners once the exchange is over. */
export interface Deadline {
  signal: AbortSignal;
  done: () => void;
}

/** Aborts after `ms` with a `TimeoutError` (as `AbortSignal.timeout` does), or with any of `also`'s reasons. */
export function deadline(ms: number, ...also: Array<AbortSignal | undefined>): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(
    () =>
      controller.abort(
        new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      ),
    ms,
  );
  const unlisten: Array<() => void> = [];
  for (const other of also) {
    if (!other) continue;
    if (other.aborted) {
      controller.abort(other.reason);
      break;
    }
    const forward = () => controller.abort(other.reason);
    other.addEventListener('abort', forward, { once: true });
    unlisten.push(() => other.removeEventListener('abort', forward));
  }
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      for (const remove of unlisten) remove();
    },
  };
}

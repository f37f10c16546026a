/**
 * A node attempt cut by its worker's drain (WORKER_SHUTDOWN_GRACE_MS ran out) is handed back, not
 * ended: it fails retryable, so Temporal runs it again on another worker, resuming from its
 * checkpoint. Answering it as cancelled, as a run cancel (D8) is answered, would make the run
 * take it for its own cancellation and fail as "run timed out" (docs/deploy.md "Draining").
 */
import { ApplicationFailure, type Context } from '@temporalio/activity';

/** The SDK cancels running activities with this reason once the shutdown grace is over. */
const WORKER_SHUTDOWN = 'WORKER_SHUTDOWN';

/** True when the attempt's cancellation comes from its worker shutting down, not from the run. */
export function cancelledByShutdown(context: Context): boolean {
  const signal = context.cancellationSignal;
  if (!signal.aborted) return false;
  if (context.cancellationDetails?.cancelRequested) return false; // the run was cancelled (D8)
  const reason: unknown = signal.reason;
  return (
    context.cancellationDetails?.workerShutdown === true ||
    (reason instanceof Error && reason.message === WORKER_SHUTDOWN)
  );
}

/** The retryable failure that hands the attempt back to Temporal. */
export function handBack(): ApplicationFailure {
  return ApplicationFailure.retryable(
    'The worker shut down before this attempt finished; it is retried on another worker.',
    'WorkerShutdown',
  );
}

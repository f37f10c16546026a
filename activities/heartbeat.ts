import { Context } from '@temporalio/activity';

/** How often a waiting activity tells Temporal it is alive; a cancel request arrives in the answer. */
const HEARTBEAT_EVERY_MS = 1_000;

/**
 * Runs `work` while heartbeating, so a run's cancel (D8) reaches an activity that is waiting on
 * a provider: Temporal delivers cancellation only through heartbeats, and then the activity's
 * cancellation signal aborts the provider call in flight.
 */
export async function heartbeating<T>(work: () => Promise<T>, details?: () => unknown): Promise<T> {
  let context: Context | undefined;
  try {
    context = Context.current();
  } catch {
    return work(); // called outside an activity (unit use): nothing to report to
  }
  // `details` is a checkpoint a retried attempt reads back (a model node's prediction id, so a retry resumes it).
  const beat = () => context!.heartbeat(details?.());
  beat();
  const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** D8: cancelling a run. The answer is the run record; its status turns `cancelled` once the request reached the run. */
import { Readable } from 'node:stream';
import { InvalidRequestError } from '../../domain/errors';
import type { RunView } from '../../domain/run-view';
import { readRunAnswer, type ReadRunDeps } from './read-run';

/**
 * Cancels a pending or running run; a cancelled run is a no-op; a completed or failed one is 409.
 * Answers the run as a read does (a finished big run's as a byte stream, D31).
 */
export async function cancelRun(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
): Promise<RunView | Readable> {
  const run = await readRunAnswer(deps, accountId, runId);
  if (run.status === 'completed' || run.status === 'failed') {
    if (run.body instanceof Readable) run.body.destroy(); // a big run's stream, never to be read
    throw new InvalidRequestError(
      `Run \`${runId}\` has already ${run.status} and cannot be cancelled.`,
      {
        code: 'run_not_cancellable',
      },
    );
  }
  if (run.status !== 'cancelled') await deps.gateway.cancel(runId);
  return run.body;
}

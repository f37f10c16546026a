/** D8: cancelling a run. The answer is the run record; its status turns `cancelled` once the request reached the run. */
import { InvalidRequestError } from '../../domain/errors';
import type { RunView } from '../../domain/run-view';
import { readRun, type ReadRunDeps } from './read-run';

/** Cancels a pending or running run; a cancelled run is a no-op; a completed or failed one is 409. */
export async function cancelRun(
  deps: ReadRunDeps,
  accountId: string,
  runId: string,
): Promise<RunView> {
  const run = await readRun(deps, accountId, runId);
  if (run.status === 'completed' || run.status === 'failed') {
    throw new InvalidRequestError(
      `Run \`${runId}\` has already ${run.status} and cannot be cancelled.`,
      {
        code: 'run_not_cancellable',
      },
    );
  }
  if (run.status !== 'cancelled') await deps.gateway.cancel(runId);
  return run;
}

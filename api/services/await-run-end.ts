/**
 * D28 `Prefer: wait=N`: holds a start's answer until the run ends. The run's `awaitEnd` update
 * completes the moment the workflow reaches its terminal state, before the record is written
 * (tools/bench/FINDINGS.md P2: waiting for the workflow to close cost ~150 ms of finalize writes).
 */
import type { RunDoc } from '../../store/documents';
import { runView, type RunView } from '../../domain/run-view';
import type { RunGateway } from '../temporal/run-gateway';
import { readRun, type ReadRunDeps } from './read-run';

/** The run's view once it has ended, or null when `ms` passed first. */
export async function awaitRunEnd(
  deps: ReadRunDeps & { gateway: RunGateway },
  run: RunDoc,
  ms: number,
): Promise<RunView | null> {
  const deadline = Date.now() + ms;
  const ended = await deps.gateway.awaitEnd(run._id, AbortSignal.timeout(ms));
  if (ended === 'aborted') return null;
  // An output too large for an update answer is read from the record once it is written.
  if (ended !== 'closed' && !ended.outputDeferred) return runView(run, ended);
  const left = deadline - Date.now();
  return left > 0 && (await deps.gateway.waitForClose(run._id, left))
    ? readRun(deps, run.account_id, run._id)
    : null;
}

/**
 * D28 `Prefer: wait=N`: holds a start's answer until the run ends. The run's `awaitEnd` update
 * completes the moment the workflow reaches its terminal state, before the record is written
 * (tools/bench/FINDINGS.md P2: waiting for the workflow to close cost ~150 ms of finalize writes).
 */
import type { RunDoc } from '../../store/documents';
import { runView, type RunView } from '../../domain/run-view';
import type { RunGateway } from '../temporal/run-gateway';
import { readRun, type ReadRunDeps } from './read-run';
import type { Drain } from '../drain';

/** What waiting for a run's end needs: reading it, and the drain that cuts the wait short. */
export type AwaitRunEndDeps = ReadRunDeps & { gateway: RunGateway; drain?: Drain };

/**
 * The run's view once it has ended, or null when `ms` passed first or the process began to drain
 * (then the start answers its usual 202 at once instead of holding the shutdown up to 60 s).
 */
export async function awaitRunEnd(
  deps: AwaitRunEndDeps,
  run: RunDoc,
  ms: number,
): Promise<RunView | null> {
  const deadline = Date.now() + ms;
  const timeout = AbortSignal.timeout(ms);
  const signal = deps.drain ? AbortSignal.any([timeout, deps.drain.signal]) : timeout;
  const ended = await deps.gateway.awaitEnd(run._id, signal);
  if (ended === 'aborted') return null;
  // An output too large for an update answer is read from the record once it is written.
  if (ended !== 'closed' && !ended.outputDeferred) return runView(run, ended);
  const left = deadline - Date.now();
  return left > 0 && (await deps.gateway.waitForClose(run._id, left))
    ? readRun(deps, run.account_id, run._id)
    : null;
}

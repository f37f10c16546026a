/**
 * D28 `Prefer: wait=N`: holds a start's answer until the run ends. The run's `awaitEnd` update
 * completes the moment the workflow reaches its terminal state, before the record is written
 * (tools/bench/FINDINGS.md P2: waiting for the workflow to close cost ~150 ms of finalize writes).
 */
import type { Readable } from 'node:stream';
import type { RunDoc } from '../../store/documents';
import { runView, type RunView } from '../../domain/run-view';
import type { EndWait, RunGateway } from '../temporal/run-gateway';
import { readRunAnswer, type ReadRunDeps } from './read-run';
import type { Drain } from '../drain';

/** What waiting for a run's end needs: reading it, and the drain that cuts the wait short. */
export type AwaitRunEndDeps = ReadRunDeps & { gateway: RunGateway; drain?: Drain };

/** A wait of `ms` for a run about to start: over at its deadline, or when the process begins to drain. */
export function endWait(deps: Pick<AwaitRunEndDeps, 'drain'>, ms: number): EndWait {
  const timeout = AbortSignal.timeout(ms);
  const signal = deps.drain ? AbortSignal.any([timeout, deps.drain.signal]) : timeout;
  return { deadline: Date.now() + ms, signal, timeout };
}

/**
 * The run's view once it has ended (a big run's as a byte stream, D31), or null when the wait is
 * over first or the process began to drain (then the start answers its usual 202 at once instead
 * of holding the shutdown up to 60 s).
 */
export async function awaitRunEnd(
  deps: AwaitRunEndDeps,
  run: RunDoc,
  wait: EndWait,
): Promise<RunView | Readable | null> {
  // The start carried the wait (RunGateway.startAwaited) unless it found the run started already (D18).
  const ended = await (wait.ended ?? deps.gateway.awaitEnd(run._id, wait.signal));
  if (ended === 'aborted') return null;
  // An output too large for an update answer is read from the record once it is written.
  if (ended !== 'closed' && !ended.outputDeferred) return runView(run, ended);
  const left = wait.deadline - Date.now();
  if (!(left > 0 && (await deps.gateway.waitForClose(run._id, left)))) return null;
  // Closed, the workflow wrote its record first: read that, not the live run (one query fewer).
  deps.knownRuns?.forget(run._id);
  return (await readRunAnswer(deps, run.account_id, run._id)).body;
}
